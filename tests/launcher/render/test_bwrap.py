"""The bwrap render, pure: goldens of the examples, the command's shape, the program the launcher's filter.
(tests/launcher/render/test_bwrap_run.py runs it.)"""

from __future__ import annotations

import shlex

import pytest
from render_cases import COVERING, EXAMPLES, FIXED, example
from render_golden import assert_golden

from launcher.render import render
from launcher.render.bwrap import NAMESPACES, SECCOMP_FD, command_argv
from launcher.render.seccomp_profile import filter_mode


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_golden(name: str) -> None:
    assert_golden("bwrap", name, render(example(name), "bwrap", FIXED))


def test_the_command_unshares_every_namespace_and_loads_the_filter_last() -> None:
    manifest = COVERING["every-row"]
    argv = command_argv(manifest, FIXED)
    assert argv[:4] == ["timeout", "--signal=KILL", str(manifest.session.ttl_s), "bwrap"]
    assert set(NAMESPACES) <= set(argv) and "--unshare-net" in argv
    assert argv[argv.index("--seccomp") + 1] == str(SECCOMP_FD)
    assert argv[argv.index("--") + 1:] == list(manifest.app.argv)
    binds = {argv[i + 1] for i, arg in enumerate(argv) if arg in ("--ro-bind", "--ro-bind-try")}
    assert "/srv/sh-test/ws" not in binds  # the workspace is not among the app's reads there
    assert not any(arg in ("--bind", "--bind-try") for arg in argv)  # nothing of the host is writable


def test_the_script_opens_the_program_on_the_fd_bwrap_reads() -> None:
    rendering = render(COVERING["every-row"], "bwrap", FIXED)
    script = dict(rendering.files)["bwrap.sh"]
    line = script.splitlines()[-1]
    assert line.endswith(f'{SECCOMP_FD}<"$(dirname "$0")/app.seccomp.bpf"')
    assert shlex.split(line.rsplit(f" {SECCOMP_FD}<", 1)[0])[0] == "exec"
    assert rendering.programs == (("app.seccomp.bpf", filter_mode(COVERING["every-row"], "app", FIXED.python)),)


def test_the_program_is_the_filter_compiled() -> None:
    mode = filter_mode(COVERING["every-row"], "app", FIXED.python)
    prepared = mode.prepared()
    try:
        program = prepared.export_bpf()
    finally:
        prepared.release()
    assert program and len(program) % 8 == 0  # struct sock_filter is 8 bytes
