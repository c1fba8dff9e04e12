"""The plan a person approves: every row of a manifest, what holds it, and whether it holds here. Pure.

Honesty rule: a row is held only when this kernel can hold it (KernelFacts) AND the code that holds it
is built (IMPLEMENTED_ROWS). Everything else is reported unheld, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from launcher.kernel import probe_facts
from launcher.kernel.probe_facts import KernelFacts
from launcher.manifest import FS_DEFAULT_MAX_CONCURRENT_UPLOADS, Manifest
from launcher.policy.cdn_fronting import fronting_notes
from launcher.policy.confine_plan import SYSTEM_BASE, SYSTEM_EXEC, SYSTEM_READ, allowance_of, python_paths
from launcher.policy.confinement import app_start_dir
from launcher.policy.layout import MODEL_PORT, PLAN_PATHS
from launcher.policy.overlay import overlay_meaning, overlay_of
from launcher.policy.plan_app import app_rows
from launcher.policy.plan_kernel import (
    always,
    cgroup,
    fs_fence,
    fuse,
    landlock_fs,
    landlock_scoping,
    landlock_tcp,
    netns,
    openat2,
    root,
    seccomp,
)
from launcher.policy.plan_net import NET_DEFAULT_MAX_WILDCARD_NAMES, NOT_REDACTED, net_rows
from launcher.policy.plan_session import session_rows
from launcher.policy.plan_spec import RowSpec as _Spec
from launcher.policy.scratch import scratch_meaning, scratch_of
from launcher.policy.wildcard_names import wildcard_notes
from pki.vocabulary import BOUNDARY, SETTING

# Row ids whose holder is built. An entry is a row id ("landlock.fs": every component) or
# "<component>:<row id>" ("app:netns": that component only). Added as the launcher and doors land.
IMPLEMENTED_ROWS: frozenset[str] = frozenset({
    # The launcher's confinement (tests/launcher/kernel, tests/integration, hello; session.audit:
    # tests/integration/test_audit_cap_session.py).
    "session.ttl", "session.audit", "uid", "netns", "landlock.fs", "landlock.tcp", "landlock.scope", "seccomp",
    "no_new_privs", "memory", "pids", "proxy_env", "ipc", "app:pidns", "app:scratch", "root",
    # What an unmodified agent needs (tests/launcher/test_manifest_env.py, tests/launcher/lifecycle/
    # test_home_seed_copy.py, tests/integration/test_demo.py).
    "app:env", "app:home_seed", "app:children",
    # The workspace as a FUSE mount the fs door serves (tests/integration/test_fs_mount*.py).
    "app:workspace.mount", "app:workspace.unmount",
    # Socket file groups (kernel) and the doors' mTLS edge check (tests/doors/test_transport*).
    "edges",
    # The fs door, running as the workspace owner (tests/doors/fs, tests/integration/test_fs_session.py).
    "fs.within_root", "fs.read_only", "fs.append_only", "fs.hidden", "fs.exec", "fs.refuse_secrets",
    "fs.no_symlinks", "fs.max_file_bytes", "fs.max_total_bytes", "fs.max_files",
    # Bodies in flight count (tests/doors/fs/test_uploads.py, tests/attacks/test_fs_uploads.py).
    "fs.max_concurrent_uploads",
    # The net door (tests/doors/net, tests/integration/test_net_session.py).
    "net.allow", "net.sni", "net.addresses", "net.ip_literals", "net.internal", "net.wildcard_names",
    "net.upstream_proxy",
    # Bound credentials (tests/doors/net/test_proxy_inject.py, tests/integration/test_inject_session.py).
    "net.inject",
    # The keys door (tests/doors/keys, tests/launcher/lifecycle/test_secret_sources.py,
    # tests/integration/test_keys_session.py).
    "keys.secrets",
    # The model door (tests/doors/model, tests/integration/test_model_session.py).
    "model.upstream", "model.secret", "model.models", "model.budget_microusd", "model.listener",
    # The shell door (tests/doors/shell, tests/integration/test_shell_session.py, tests/attacks/test_shell_commands.py).
    "shell:scratch", "shell.workspace", "shell.egress", "shell.commands", "shell.max_live",
    # Overlay mode (tests/integration/test_shell_overlay.py, tests/doors/shell/test_changes.py).
    "shell.apply",
})
# What this version lacks to hold a row that is not in IMPLEMENTED_ROWS, by the row id's first part.
SHELL_DEFAULT_MAX_LIVE = 8  # the shell door's default when doors.shell.max_live is left out (doors/shell agrees)
_MISSING_HOLDER = {"keys": "the keys door", "shell": "the shell door", "model": "the model door"}
_NO_EGRESS = ("fs", "keys")  # network namespace with nothing in it
_OWN_NETNS = ("app", "fs", "keys", "shell")


@dataclass(frozen=True)
class PlanRow:
    component: str
    row_id: str
    meaning: str
    kind: str
    held_by: str
    held: bool
    why_unheld: str
    kernel_can_hold: bool

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class ComponentPlan:
    """What one component may touch. Paths and ports are the ones the kernel is given (confine_plan), with
    `<sid>` for the session id; `connects` says in words where those ports and its edges lead."""

    role: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    executes: tuple[str, ...]
    connects: tuple[str, ...]
    edges_in: tuple[str, ...]
    edges_out: tuple[str, ...]
    max_memory_mb: int
    max_pids: int
    tcp_connect: tuple[int, ...] = ()
    udp: bool = False  # plain UDP sockets for its resolver (Landlock does not govern UDP)

    def as_dict(self) -> dict[str, Any]:
        """The component as JSON-ready data."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in self.__dict__.items()}


@dataclass(frozen=True)
class Plan:
    sha256: str
    session: str
    trust_domain: str
    ttl_s: int
    workspace: str
    argv: tuple[str, ...]  # the app's command, exactly as exec gets it
    components: tuple[ComponentPlan, ...]
    rows: tuple[PlanRow, ...]
    # Path lists the text names by a label instead of repeating them for every component.
    path_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Known gaps no row asks about but a person should know (tests/attacks/test_host_reach.py keeps them honest).
    not_covered: tuple[str, ...] = ()
    start_dir: str = ""  # where the app starts (app.cwd): the workspace, or its private dir with <sid>

    @property
    def unheld_count(self) -> int:
        return sum(1 for row in self.rows if not row.held)

    def as_dict(self) -> dict[str, Any]:
        """The whole plan as JSON-ready data (the `check --json` shape)."""
        return {
            "sha256": self.sha256, "session": self.session, "trust_domain": self.trust_domain,
            "ttl_s": self.ttl_s, "workspace": self.workspace, "argv": list(self.argv), "start_dir": self.start_dir,
            "components": [component.as_dict() for component in self.components],
            "rows": [row.as_dict() for row in self.rows],
            "row_count": len(self.rows), "unheld_count": self.unheld_count,
            "path_groups": {label: list(paths) for label, paths in self.path_groups},
            "not_covered": list(self.not_covered),
        }


# --- rows -----------------------------------------------------------------------------------------


def _judge(component: str, spec: _Spec, facts: KernelFacts) -> PlanRow:
    kernel_problem = spec.kernel(facts)
    built = spec.row_id in IMPLEMENTED_ROWS or f"{component}:{spec.row_id}" in IMPLEMENTED_ROWS
    reasons = [kernel_problem] if kernel_problem else []
    if not built:
        missing = _MISSING_HOLDER.get(spec.row_id.split(".")[0]) or _MISSING_HOLDER.get(component, "its holder")
        reasons.append(f"this version of sharness-launch lacks {missing}: remove the row from the manifest, "
                       "or run with --best-effort to run it unheld")
    return PlanRow(component, spec.row_id, spec.meaning, spec.kind, spec.held_by, not reasons,
                   "; ".join(reasons), kernel_problem is None)


def _confinement(manifest: Manifest, role: str) -> Iterator[_Spec]:
    kernel = "the kernel"
    if role == "fs":
        yield _Spec("uid", "runs as the workspace owner (never root, never the app's uid), fenced by Landlock and "
                    "seccomp", BOUNDARY, f"{kernel} (credentials)", root)
    else:
        yield _Spec("uid", f"runs as its own user sh-<sid>-{role}, under an id no recent session had and nothing "
                    "holds", BOUNDARY, f"{kernel} (credentials)", root)
    if role in _OWN_NETNS:
        inside = "nothing but loopback" if role in _NO_EGRESS else "loopback and the net door's proxy"
        if role not in _NO_EGRESS and (role, "model") in manifest.edges:
            inside += f", and the model door's listener (127.0.0.1:{MODEL_PORT})"
        yield _Spec("netns", f"own network namespace holding {inside}", BOUNDARY,
                    f"{kernel} (network namespace)", netns)
    yield _Spec("ipc", "own IPC namespace: no one else's SysV IPC or POSIX queues", BOUNDARY, f"{kernel} (IPC)", root)
    yield _Spec("root", "its own root holds only its paths, each as it resolves with no symlink (none of /proc, /sys, "
                "/dev), one mount each without submounts, read-only unless it writes there", BOUNDARY,
                f"{kernel} (mount namespace); the launcher refuses a path that resolves otherwise (exit 78)", root)
    if role == "app":  # its init dies with the launcher, and the namespace with it (launcher/lifecycle/app_init.py)
        yield _Spec("pidns", "own pid namespace: sees no host process", BOUNDARY, f"{kernel} (pid namespace)", root)
    yield _Spec("landlock.fs", "files: only what this plan lists for it; nothing it writes is executable, compared by "
                "what each path resolves to", BOUNDARY, f"{kernel} (Landlock)", landlock_fs("file rules"))
    binds = manifest.app.bind_tcp if role == "app" else tuple(manifest.door_rows(role).get("bind_tcp", ()))
    row = "app.bind_tcp" if role == "app" else f"doors.{role}.bind_tcp"
    bind_words = f"binds only {', '.join(map(str, binds))} ({row}, in its own netns)" if binds else "binds nothing"
    yield _Spec("landlock.tcp", f"TCP: {bind_words}, connects only to the ports its rows need", BOUNDARY,
                f"{kernel} (Landlock)", landlock_tcp)
    yield _Spec("landlock.scope", "cannot signal, or reach abstract sockets of, processes outside it",
                BOUNDARY, f"{kernel} (Landlock scoping)", landlock_scoping)
    yield _Spec("seccomp", "denied: ptrace, process_vm_*, io_uring, bpf, perf, keyctl, mount, unshare, TCP Fast "
                "Open, memfd_secret, rare socket families, listen() without a bind row where TCP is allowed, ...",
                BOUNDARY, f"{kernel} (seccomp)", seccomp)
    yield _Spec("no_new_privs", "can never gain privileges (setuid binaries, file capabilities)", BOUNDARY,
                f"{kernel} (no_new_privs)", always)
    memory_mb, pids = manifest.process_limits(role)
    yield _Spec("memory", f"memory at most {memory_mb} MB", BOUNDARY, f"{kernel} (cgroup memory)", cgroup("memory"))
    yield _Spec("pids", f"at most {pids} processes and threads", BOUNDARY, f"{kernel} (cgroup pids)", cgroup("pids"))
    if (scratch := scratch_of(manifest, role, PLAN_PATHS)) is not None:
        yield _Spec("scratch", scratch_meaning(scratch), BOUNDARY, f"{kernel} (tmpfs size and inode limits)", root)
    calls = ", ".join(manifest.edges_out(role)) or "no door"
    callers = ", ".join(manifest.edges_in(role)) or "nobody"
    yield _Spec("edges", f"may call {calls}; may be called by {callers}", BOUNDARY,
                "the kernel (socket owner and mode) and the called door (mTLS edge check)", root)
    if role == "app" and manifest.app.mounts_workspace:
        yield from _mount_rows(manifest.workspace)
    if role == "app" and ("app", "net") in manifest.edges:
        yield _Spec("proxy_env", "HTTP(S)_PROXY point at the net door; ignoring them leaves no way out",
                    SETTING, "the app's environment (it could unset it)", always)
    if role == "app":
        yield from (_Spec(*row) for row in app_rows(manifest))


def _mount_rows(workspace: str) -> Iterator[_Spec]:
    yield _Spec("workspace.mount", f"{workspace} is a FUSE mount in its own mount namespace only: every open, "
                "write, rename and delete goes to the fs door, which holds every doors.fs row (refusals are errnos: "
                "EACCES, EPERM, EFBIG, EDQUOT, ENOSPC); writes are staged and checked on close", BOUNDARY,
                "the fs door (its own user) behind the kernel's FUSE mount (nosuid, nodev)", fuse)
    yield _Spec("workspace.unmount", "cannot unmount it or mount over it (no CAP_SYS_ADMIN); a dead fs door ends "
                "the session and fails the app's calls (ENOTCONN), never hangs them", BOUNDARY,
                "the kernel (capabilities, FUSE connection abort)", fuse)


def _fs_rows(rows: dict[str, Any], workspace: str) -> Iterator[_Spec]:
    door = "the fs door (its own user)"
    yield _Spec("fs.within_root", f"every path resolves beneath {workspace}; no escape by '..' or symlink; names "
                "with controls, bidi, zero-width or line-separator characters refused (row path); rows compare "
                "names folding case where the file system folds", BOUNDARY, f"{door}, openat2 RESOLVE_BENEATH",
                openat2)
    listed = {"read_only": "read, never written, renamed or deleted",
              "append_only": "only grow: no truncate, replace, delete or rename",
              "hidden": "neither read nor listed"}
    for key, words in listed.items():
        if rows.get(key):
            yield _Spec(f"fs.{key}", f"{', '.join(rows[key])}: {words}", BOUNDARY, door, fs_fence)
    exec_words = f"executable only under {', '.join(rows['exec'])}" if rows.get("exec") else "never executable"
    yield _Spec("fs.exec", f"files it writes are {exec_words}", BOUNDARY, door, fs_fence)
    if rows.get("refuse_secrets"):
        yield _Spec("fs.refuse_secrets", "refuses content holding a private key", BOUNDARY, door, fs_fence)
    if rows.get("no_symlinks"):
        yield _Spec("fs.no_symlinks", "follows no symlink at all", BOUNDARY, door, openat2)
    for key, words in (("max_file_bytes", "bytes per file"),
                       ("max_total_bytes", "bytes written per session, bodies still arriving included"),
                       ("max_files", "files created per session")):
        yield _Spec(f"fs.{key}", f"at most {rows[key]} {words}", BOUNDARY, door, fs_fence)
    uploads = rows.get("max_concurrent_uploads", FS_DEFAULT_MAX_CONCURRENT_UPLOADS)
    yield _Spec("fs.max_concurrent_uploads", f"at most {uploads} bodies in flight at once per client",
                BOUNDARY, door, fs_fence)


def _keys_rows(rows: dict[str, Any]) -> Iterator[_Spec]:
    for name, secret in rows.get("secrets", {}).items():
        yield _Spec("keys.secrets", f"{name} (from {secret['from']}, in no other component's root): sealed to "
                    f"{', '.join(secret['roles'])} for {', '.join(secret['hosts'])}, never in clear", BOUNDARY,
                    "the keys door (its own user)", root)


def _shell_rows(rows: dict[str, Any], manifest: Manifest) -> Iterator[_Spec]:
    overlay = overlay_of(manifest, "shell", PLAN_PATHS)
    if overlay is not None:
        yield _Spec("shell.workspace", overlay_meaning(overlay), BOUNDARY,
                    "the kernel (overlayfs over a read-only idmapped bind; Landlock: writable, never executable)",
                    landlock_fs("workspace rules"))
        yield _Spec("shell.apply", "what the overlay holds reaches the workspace only through the fs door (edge "
                    "shell→fs): every doors.fs row judges each path, written as the workspace's owner; what is "
                    "refused stays in the overlay", BOUNDARY, "the fs door (the workspace owner's user, a process "
                    "the shell is not)", root)
    else:
        reads = "reads the workspace directly (never writes it)" if rows["workspace"] == "read" else \
            "has no access to the workspace"
        yield _Spec("shell.workspace", f"commands it runs {reads}", BOUNDARY, "the kernel (Landlock)",
                    landlock_fs("workspace rules"))
    route = "only through the net door's proxy" if ("shell", "net") in manifest.edges else "nowhere"
    yield _Spec("shell.egress", f"commands reach the network {route}", BOUNDARY,
                "the kernel (network namespace)", netns)
    yield _Spec("shell.commands", "each command in its own cgroup (all of it killed at its end, timeout or the "
                "session's), session and Landlock layer (no signal to the door, no write outside its scratch)",
                BOUNDARY, "the kernel (cgroups, Landlock), set up by the shell door", landlock_scoping)
    live = rows.get("max_live", SHELL_DEFAULT_MAX_LIVE)
    yield _Spec("shell.max_live", f"at most {live} commands at once", BOUNDARY, "the shell door (its own user)",
                root)


def _model_rows(rows: dict[str, Any], manifest: Manifest) -> Iterator[_Spec]:
    door = "the model door (its own user)"
    twin = rows["upstream"] == "twin"
    if twin:
        script = f", scripted by {len(rows['twin_script'].get('rules', []))} rule(s) of the manifest" \
            if "twin_script" in rows else ""
        yield _Spec("model.upstream", "answers from the built-in twin of the Messages API "
                    f"(sharness.model.anthropic.twin{script}): no call leaves the machine, no internet socket",
                    BOUNDARY,
                    f"{door}; the kernel (seccomp: no internet socket)", root)
    else:
        ranges = ", ".join(rows.get("internal_ranges", [])) or "none"
        trust = f"the CA bundle {rows['ca_bundle']} only" if "ca_bundle" in rows else "the system store"
        yield _Spec("model.upstream", f"calls only {rows['upstream']}, TLS verified against {trust}; private "
                    f"ranges it may resolve into: {ranges} (never loopback or link-local)", BOUNDARY,
                    f"{door} (its own check); the kernel (Landlock TCP: the upstream's port only)", root)
        yield _Spec("model.secret", f"sends secret {rows['secret']} from keys, released for each call; the app "
                    "never sees it, and what the app sends as a credential is never forwarded", BOUNDARY, door,
                    root)
    models = ", ".join(rows["models"]) if "models" in rows else "every priced model"
    yield _Spec("model.models", f"the app may call {models}", BOUNDARY, door, root)
    priced = f"{len(rows.get('prices', {}))} manifest override(s) over the shipped table"
    yield _Spec("model.budget_microusd", f"spends at most {rows['budget_microusd']} micro-USD in the session "
                f"(prices: {priced}); forwarded max_tokens lowered to what is left", BOUNDARY, door, root)
    for role in ("app", "shell"):
        if role in manifest.roles and (role, "model") in manifest.edges:
            yield _Spec("model.listener", f"plain HTTP for {role} at 127.0.0.1:{MODEL_PORT} inside {role}'s "
                        "network namespace only (ANTHROPIC_BASE_URL): the kernel admits the caller", BOUNDARY,
                        "the kernel (network namespace)", netns)


def _door_rows(manifest: Manifest, role: str) -> Iterator[_Spec]:
    rows = manifest.door_rows(role)
    if role == "fs":
        yield from _fs_rows(rows, manifest.workspace)
    elif role == "net":
        yield from net_rows(rows)
    elif role == "keys":
        yield from _keys_rows(rows)
    elif role == "shell":
        yield from _shell_rows(rows, manifest)
    elif role == "model":
        yield from _model_rows(rows, manifest)


# --- components -----------------------------------------------------------------------------------


def _unique(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))


def _connects(manifest: Manifest, role: str) -> tuple[str, ...]:
    connects = tuple(f"{server} door (mTLS)" for server in manifest.edges_out(role))
    net_allow = manifest.door_rows("net").get("allow", {})
    if role in ("app", "shell"):
        if (role, "model") in manifest.edges:
            connects = (*connects, f"model door (plain HTTP, 127.0.0.1:{MODEL_PORT} in its netns)")
        return (*connects, *(f"{entry} via the net door" for entry in net_allow.get(role, [])))
    if role == "net" and (proxy := manifest.door_rows("net").get("upstream_proxy")):
        return (*connects, f"the upstream proxy {proxy['address']} only")
    if role == "net":
        return (*connects, *sorted({entry for entries in net_allow.values() for entry in entries}))
    if role == "model":
        upstream = manifest.door_rows("model")["upstream"]
        return (*connects, "nothing: the built-in twin" if upstream == "twin" else upstream)
    return connects


def _component(manifest: Manifest, role: str, python: tuple[str, ...]) -> ComponentPlan:
    # The very record the kernel is given (launcher/policy/confinement.py), laid out with <sid>.
    allowance = allowance_of(manifest, role, PLAN_PATHS, python)
    memory_mb, pids = manifest.process_limits(role)
    return ComponentPlan(
        role, _unique(allowance.read), _unique(allowance.write), _unique(allowance.exec),
        _connects(manifest, role), manifest.edges_in(role), manifest.edges_out(role), memory_mb, pids,
        tcp_connect=allowance.tcp_connect, udp=allowance.allow_udp,
    )


def build_plan(manifest: Manifest, facts: KernelFacts, python: tuple[str, ...] | None = None) -> Plan:
    """Every row of `manifest` with its barrier kind, holder, and whether it holds on a kernel with `facts`;
    each component's paths as the kernel gets them, with `python` (default: this launcher's) for the interpreter."""
    python = python_paths() if python is None else python
    specs: list[tuple[str, _Spec]] = [("session", spec) for spec in session_rows(manifest)]
    for role in manifest.roles:
        specs.extend((role, spec) for spec in _confinement(manifest, role))
        specs.extend((role, spec) for spec in _door_rows(manifest, role))
    return Plan(
        sha256=manifest.sha256, session=manifest.session.name, trust_domain=manifest.session.trust_domain,
        ttl_s=manifest.session.ttl_s, workspace=manifest.workspace, argv=manifest.app.argv,
        components=tuple(_component(manifest, role, python) for role in manifest.roles),
        rows=tuple(_judge(component, spec, facts) for component, spec in specs),
        path_groups=tuple((label, paths) for label, paths in
                          (("[system]", SYSTEM_READ), ("[base]", SYSTEM_BASE), ("[programs]", SYSTEM_EXEC),
                           ("[python]", python)) if paths),
        not_covered=_not_covered(manifest, facts),
        start_dir=app_start_dir(manifest, PLAN_PATHS),
    )


def _not_covered(manifest: Manifest, facts: KernelFacts) -> tuple[str, ...]:
    gaps, since = [], probe_facts.LANDLOCK_RESOLVE_UNIX_ABI
    if manifest.app.files_read and not facts.landlock_resolve_unix:
        gaps.append("a world-writable Unix socket that appears inside app.files.read after the session starts is "
                    f"reachable: Landlock ABI {facts.landlock_abi} does not govern connect() (ABI {since}'s "
                    "RESOLVE_UNIX does); one present at start refuses the session")
    if "net" in manifest.roles:
        rows = manifest.door_rows("net")
        gaps += fronting_notes(rows.get("allow", {}))
        gaps += wildcard_notes(rows.get("allow", {}), rows.get("max_wildcard_names", NET_DEFAULT_MAX_WILDCARD_NAMES))
    gaps += [NOT_REDACTED] if manifest.bound_hosts else []
    return tuple(gaps)
