# The two commands a newcomer runs are `make run` and `make test`; both bootstrap .venv themselves, from a
# clone anywhere (/root, a 0700 home: components see the tree through their private roots, docs/decisions.md).
# The system interpreter when it is recent enough, as the benchmarks' baselines were measured on it; any
# other works if other users can read it (the launcher says which path they cannot, before it starts).
PYTHON ?= $(shell test -x /usr/bin/python3 && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' && echo /usr/bin/python3 || echo python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: run test lint bench gc clean system-tools fuse-libs bytecode claude-code install install-units uninstall

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# compat: the editable install is a plain path in a .pth, not setuptools' import finder, which loads pathlib and
# friends in site: ~9-12 ms of every Python start here (the launcher, each door, `sh`; docs/decisions/bench.md,
# "Shell door"). A regular install (`make install`) has no finder either.
$(STAMP): pyproject.toml | $(BIN)/python fuse-libs
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[test,lint,bench,mount]' --config-settings editable_mode=compat
	touch $(STAMP)

# The workspace mount (app.workspace "mount"): pyfuse3 builds against libfuse3 (headers and pkg-config), and
# fusermount3 comes with fuse3. apt-get runs only when one is missing; without them the mount is refused (78).
fuse-libs:
	@pkg-config --exists fuse3 2>/dev/null && command -v fusermount3 >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 libfuse3-dev pkg-config) || \
	  echo "make: could not install fuse3, libfuse3-dev and pkg-config; app.workspace \"mount\" will be refused" >&2

# The app's pid-namespace init as a static program (~0.3 MB resident instead of a copy of the launcher's heap).
# Without a C compiler the launcher runs the same wait loop in Python, and says nothing: both hold the same rows.
INIT := launcher/kernel/_init/sharness-init
$(INIT): launcher/kernel/_init/sharness_init.c
	@cc -static -O2 -Wall -Wextra -o $@ $< && chmod 0755 $@ || \
	  echo "make: no static C build of $@ (cc -static failed); the app's init runs in Python" >&2

# The console script, this project's (launcher/entry.py) in place of pip's: its interpreter runs with -S, so
# `sharness-launch sh` skips site (~2.5 ms of CPU per in-session call; docs/decisions/bench.md, "shquick").
SCRIPT := $(BIN)/.script
$(SCRIPT): $(STAMP) launcher/entry.py
	$(BIN)/python -I -m launcher.entry --write-script $(BIN)/sharness-launch
	touch $@

# The tree's bytecode, up to date: where PYTHONDONTWRITEBYTECODE is set no start writes it, and every launcher
# start would compile launcher/, doors/ and pki/ again (~100 ms; docs/decisions/bench.md, "launcher").
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q launcher doors pki >/dev/null

# A real agent session on the sample project (manifests/examples/demo/), its summary, then the probe's table.
run: $(STAMP) $(SCRIPT) $(INIT) bytecode
	$(BIN)/sharness-launch demo
	$(BIN)/sharness-launch hello

# The casefold tests need mkfs.ext4 and chattr (e2fsprogs); they skip, saying why, when the kernel cannot fold
# case. Quick when present: apt-get runs only when a tool is missing.
system-tools:
	@command -v mkfs.ext4 >/dev/null 2>&1 && command -v chattr >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq e2fsprogs) || \
	  echo "make: could not install e2fsprogs; the casefold tests will skip saying so" >&2

# The bwrap render runs for real in tests/launcher/render (they skip, saying so, without it).
	@command -v bwrap >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) || \
	  echo "make: could not install bubblewrap; the bwrap render's run tests will skip saying so" >&2

# strace holds a reply of the fs door back in tests/integration/test_fs_mount_session.py (a request the door read
# and never answered: the app then outlives its SIGKILL); that test skips, saying so, without it.
	@command -v strace >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace) || \
	  echo "make: could not install strace; the unanswered-request session test will skip saying so" >&2

# Claude Code's native binary (the npm package @anthropic-ai/claude-code-linux-x64, which needs no node), pinned
# to one version and its sha512 from the registry, checked before it is unpacked; tests/integration/
# test_claude_code_session.py runs it as the app (and skips naming this target without it). npm fetches into a
# throw-away cache, so nothing is left in root's home; ~15-25 s for 186 MB (docs/decisions/agents.md).
CLAUDE_CODE_VERSION := 2.1.332
CLAUDE_CODE_SHA512 := sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==
CLAUDE_CODE_DIR ?= /var/cache/sharness/claude-code-$(CLAUDE_CODE_VERSION)
claude-code:
	@test -x $(CLAUDE_CODE_DIR)/claude || { \
	  tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  npm pack --silent --cache "$$tmp/npm" --pack-destination "$$tmp" \
	    @anthropic-ai/claude-code-linux-x64@$(CLAUDE_CODE_VERSION) >/dev/null && \
	  test "sha512-$$(openssl dgst -sha512 -binary "$$tmp"/*.tgz | base64 -w0)" = "$(CLAUDE_CODE_SHA512)" && \
	  tar -xzf "$$tmp"/*.tgz -C "$$tmp" package/claude && \
	  install -d -m 0755 $(CLAUDE_CODE_DIR) && install -m 0755 "$$tmp/package/claude" $(CLAUDE_CODE_DIR)/claude.part && \
	  mv $(CLAUDE_CODE_DIR)/claude.part $(CLAUDE_CODE_DIR)/claude; \
	} || echo "make: could not fetch Claude Code $(CLAUDE_CODE_VERSION) with sha512 as pinned (npm, openssl);" \
	  "the Claude Code session test will skip saying so" >&2

# Two pytest processes at once: the tests that need root (real sessions, mostly waiting on the kernel and on their
# children, one at a time so their leftover checks see only their own) and, beside them on the other core, the
# rest, which make no session; the second's report is printed after the first's. Either failing fails the target.
UNIT_LOG := $(VENV)/unit-tests.log
test: $(STAMP) $(SCRIPT) $(INIT) system-tools claude-code
	@$(BIN)/python -m pytest -m "not root" $(PYTEST_ARGS) > $(UNIT_LOG) 2>&1 & unit=$$!; \
	$(BIN)/python -m pytest -m root $(PYTEST_ARGS); root=$$?; \
	wait $$unit; unit_rc=$$?; \
	echo "== the tests that need no root (run beside the ones above):"; cat $(UNIT_LOG); \
	test $$root -eq 0 -a $$unit_rc -eq 0

lint: $(STAMP)
	$(BIN)/ruff check launcher doors pki tests bench
	$(BIN)/mypy

bench: $(STAMP) $(SCRIPT) $(INIT) bytecode
	$(BIN)/python -m bench $(if $(QUICK),--quick,)

gc: $(STAMP)
	$(BIN)/sharness-launch gc

clean:
	rm -rf $(VENV) build *.egg-info $(INIT)

# sharness-launchd as a systemd service (systemd/): the package in its own venv under SHARNESS_HOME, its two
# commands in BINDIR, the units (ExecStart rendered to BINDIR) in UNITDIR, and the policy, which is never
# overwritten (the example allows no one until the admin names principals). DESTDIR stages it all elsewhere.
DESTDIR ?=
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SHARNESS_HOME ?= /opt/sharness-launch
UNITDIR ?= /etc/systemd/system
POLICY ?= /etc/sharness/launchd.json
UNITS := sharness-launchd.socket sharness-launchd.service

install-units:
	install -d -m 0755 $(DESTDIR)$(UNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/sharness-launchd.service > $(DESTDIR)$(UNITDIR)/sharness-launchd.service
	install -m 0644 systemd/sharness-launchd.socket $(DESTDIR)$(UNITDIR)/sharness-launchd.socket
	chmod 0644 $(DESTDIR)$(UNITDIR)/sharness-launchd.service

install: install-units
	test -x $(DESTDIR)$(SHARNESS_HOME)/bin/python || $(PYTHON) -m venv $(DESTDIR)$(SHARNESS_HOME)
	$(DESTDIR)$(SHARNESS_HOME)/bin/pip install --quiet .
	$(DESTDIR)$(SHARNESS_HOME)/bin/python -I -m launcher.entry --write-script $(DESTDIR)$(SHARNESS_HOME)/bin/sharness-launch
	install -d -m 0755 $(DESTDIR)$(BINDIR)
	ln -sf $(SHARNESS_HOME)/bin/sharness-launch $(DESTDIR)$(BINDIR)/sharness-launch
	ln -sf $(SHARNESS_HOME)/bin/sharness-launchd $(DESTDIR)$(BINDIR)/sharness-launchd
	install -d -m 0755 -o root -g root $(DESTDIR)$(dir $(POLICY))
	test -e $(DESTDIR)$(POLICY) || install -m 0644 -o root -g root systemd/launchd.example.json $(DESTDIR)$(POLICY)
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload && \
	  echo "make: installed; name principals in $(POLICY), then: systemctl enable --now sharness-launchd.socket"; \
	else echo "make: installed (systemd is not PID 1 here: no daemon-reload)"; fi

# The policy stays (it is the admin's); PURGE=1 removes it too.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	  systemctl disable --now sharness-launchd.socket sharness-launchd.service || true; fi
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	rm -f $(DESTDIR)$(BINDIR)/sharness-launch $(DESTDIR)$(BINDIR)/sharness-launchd
	rm -rf $(DESTDIR)$(SHARNESS_HOME)
	$(if $(PURGE),rm -f $(DESTDIR)$(POLICY),)
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
