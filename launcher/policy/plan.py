"""The plan a person approves: every row of a manifest, what holds it, and whether it holds here. Pure.

Honesty rule: a row is held only when this kernel can hold it (KernelFacts) AND the code that holds it
is built (IMPLEMENTED_ROWS). Everything else is reported unheld, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from launcher.kernel.probe_facts import KernelFacts
from launcher.manifest import Manifest
from pki.vocabulary import BOUNDARY, RUN_ROOT, SETTING

# Row ids whose holder is built. An entry is a row id ("landlock.fs": every component) or
# "<component>:<row id>" ("app:netns": that component only). Added as the launcher and doors land.
IMPLEMENTED_ROWS: frozenset[str] = frozenset({
    # Issue #4: the launcher's confinement (tests/launcher/test_confine*.py, tests/integration, hello).
    "session.ttl", "uid", "netns", "landlock.fs", "landlock.tcp", "landlock.scope", "seccomp", "no_new_privs",
    "memory", "pids", "proxy_env",
    # Issues #3 and #4: socket file groups (kernel) and the doors' mTLS edge check (tests/doors/test_transport*).
    "edges",
    # Issue #5: the fs door, running as the workspace owner (tests/doors/fs, tests/integration/test_fs_session.py).
    "fs.within_root", "fs.read_only", "fs.append_only", "fs.hidden", "fs.exec", "fs.refuse_secrets",
    "fs.no_symlinks", "fs.max_file_bytes", "fs.max_total_bytes", "fs.max_files",
    # Issue #6: the net door (tests/doors/net, tests/integration/test_net_session.py).
    "net.allow", "net.sni", "net.addresses", "net.ip_literals",
})
# Where the holder of each row is being built (for the "not built yet" reason).
_BUILT_IN = {"fs": "issue #5", "net": "issue #6", "edges": "issues #3 and #4", "keys": "the keys door's issue",
             "shell": "issue #4 and the shell door's issue", "model": "the model door's issue"}
_NO_EGRESS = ("fs", "keys")  # network namespace with nothing in it
_OWN_NETNS = ("app", "fs", "keys", "shell")

KernelCheck = Callable[[KernelFacts], "str | None"]


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
    role: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    executes: tuple[str, ...]
    connects: tuple[str, ...]
    edges_in: tuple[str, ...]
    edges_out: tuple[str, ...]
    max_memory_mb: int
    max_pids: int

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
    components: tuple[ComponentPlan, ...]
    rows: tuple[PlanRow, ...]
    # Known gaps no row asks about but a person should know (tests/attacks/test_host_reach.py keeps them honest).
    not_covered: tuple[str, ...] = ()

    @property
    def unheld_count(self) -> int:
        return sum(1 for row in self.rows if not row.held)

    def as_dict(self) -> dict[str, Any]:
        """The whole plan as JSON-ready data (the `check --json` shape)."""
        return {
            "sha256": self.sha256, "session": self.session, "trust_domain": self.trust_domain,
            "ttl_s": self.ttl_s, "workspace": self.workspace,
            "components": [component.as_dict() for component in self.components],
            "rows": [row.as_dict() for row in self.rows],
            "row_count": len(self.rows), "unheld_count": self.unheld_count,
            "not_covered": list(self.not_covered),
        }


# --- what the kernel must offer -------------------------------------------------------------------


def _root(facts: KernelFacts) -> str | None:
    return None if facts.is_root else "needs root to create users and hand out sockets (this ran without root)"


def _netns(facts: KernelFacts) -> str | None:
    return _root(facts) or (None if facts.netns else "this kernel has no network namespaces")


def _landlock(abi: int, what: str) -> KernelCheck:
    def check(facts: KernelFacts) -> str | None:
        if facts.landlock_abi >= abi:
            return None
        return f"{what} needs Landlock ABI {abi}; this kernel has ABI {facts.landlock_abi}"
    return check


def _seccomp(facts: KernelFacts) -> str | None:
    return None if facts.seccomp_filter else "this kernel has no seccomp filters"


def _cgroup(controller: str) -> KernelCheck:
    def check(facts: KernelFacts) -> str | None:
        place = facts.cgroup_memory if controller == "memory" else facts.cgroup_pids
        return None if place else f"no cgroup {controller} controller is available"
    return check


def _openat2(facts: KernelFacts) -> str | None:
    return _root(facts) or (None if facts.openat2 else "this kernel has no openat2 (RESOLVE_BENEATH)")


def _fs_fence(facts: KernelFacts) -> str | None:
    return _root(facts) or _landlock(1, "keeping the app from writing the workspace directly")(facts)


def _always(facts: KernelFacts) -> str | None:
    return None


# --- rows -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    row_id: str
    meaning: str
    kind: str
    held_by: str
    kernel: KernelCheck


def _judge(component: str, spec: _Spec, facts: KernelFacts) -> PlanRow:
    kernel_problem = spec.kernel(facts)
    built = spec.row_id in IMPLEMENTED_ROWS or f"{component}:{spec.row_id}" in IMPLEMENTED_ROWS
    reasons = [kernel_problem] if kernel_problem else []
    if not built:
        reasons.append(f"not built yet: {_BUILT_IN.get(spec.row_id.split('.')[0], 'issue #4')}")
    return PlanRow(component, spec.row_id, spec.meaning, spec.kind, spec.held_by, not reasons,
                   "; ".join(reasons), kernel_problem is None)


def _confinement(manifest: Manifest, role: str) -> Iterator[_Spec]:
    kernel = "the kernel"
    if role == "fs":
        yield _Spec("uid", "runs as the workspace owner (never root, never the app's uid), fenced by Landlock and "
                    "seccomp", BOUNDARY, f"{kernel} (credentials)", _root)
    else:
        yield _Spec("uid", f"runs as its own user sh-<sid>-{role}", BOUNDARY, f"{kernel} (credentials)", _root)
    if role in _OWN_NETNS:
        inside = "nothing but loopback" if role in _NO_EGRESS else "loopback and the net door's proxy"
        yield _Spec("netns", f"own network namespace holding {inside}", BOUNDARY,
                    f"{kernel} (network namespace)", _netns)
    yield _Spec("landlock.fs", "files: only what this plan lists for it", BOUNDARY,
                f"{kernel} (Landlock)", _landlock(1, "file rules"))
    yield _Spec("landlock.tcp", "TCP: binds nothing, connects only to the ports its rows need", BOUNDARY,
                f"{kernel} (Landlock)", _landlock(4, "TCP rules"))
    yield _Spec("landlock.scope", "cannot signal, or reach abstract sockets of, processes outside it",
                BOUNDARY, f"{kernel} (Landlock scoping)", _landlock(6, "signal and socket scoping"))
    yield _Spec("seccomp", "denied: ptrace, process_vm_*, io_uring, bpf, perf, keyctl, mount, unshare, ...",
                BOUNDARY, f"{kernel} (seccomp)", _seccomp)
    yield _Spec("no_new_privs", "can never gain privileges (setuid binaries, file capabilities)", BOUNDARY,
                f"{kernel} (no_new_privs)", _always)
    memory_mb, pids = manifest.process_limits(role)
    yield _Spec("memory", f"memory at most {memory_mb} MB", BOUNDARY, f"{kernel} (cgroup memory)",
                _cgroup("memory"))
    yield _Spec("pids", f"at most {pids} processes and threads", BOUNDARY, f"{kernel} (cgroup pids)",
                _cgroup("pids"))
    calls = ", ".join(manifest.edges_out(role)) or "no door"
    callers = ", ".join(manifest.edges_in(role)) or "nobody"
    yield _Spec("edges", f"may call {calls}; may be called by {callers}", BOUNDARY,
                "the kernel (socket owner and mode) and the called door (mTLS edge check)", _root)
    if role == "app" and ("app", "net") in manifest.edges:
        yield _Spec("proxy_env", "HTTP(S)_PROXY point at the net door; ignoring them leaves no way out",
                    SETTING, "the app's environment (it could unset it)", _always)


def _fs_rows(rows: dict[str, Any], workspace: str) -> Iterator[_Spec]:
    door = "the fs door (its own user)"
    yield _Spec("fs.within_root", f"every path resolves beneath {workspace}; no escape by '..' or symlink",
                BOUNDARY, f"{door}, openat2 RESOLVE_BENEATH", _openat2)
    listed = {"read_only": "read, never written, renamed or deleted",
              "append_only": "only grow: no truncate, replace, delete or rename",
              "hidden": "neither read nor listed"}
    for key, words in listed.items():
        if rows.get(key):
            yield _Spec(f"fs.{key}", f"{', '.join(rows[key])}: {words}", BOUNDARY, door, _fs_fence)
    exec_words = f"executable only under {', '.join(rows['exec'])}" if rows.get("exec") else "never executable"
    yield _Spec("fs.exec", f"files it writes are {exec_words}", BOUNDARY, door, _fs_fence)
    if rows.get("refuse_secrets"):
        yield _Spec("fs.refuse_secrets", "refuses content holding a private key", BOUNDARY, door, _fs_fence)
    if rows.get("no_symlinks"):
        yield _Spec("fs.no_symlinks", "follows no symlink at all", BOUNDARY, door, _openat2)
    for key, words in (("max_file_bytes", "bytes per file"), ("max_total_bytes", "bytes written per session"),
                       ("max_files", "files created per session")):
        yield _Spec(f"fs.{key}", f"at most {rows[key]} {words}", BOUNDARY, door, _fs_fence)


def _net_rows(rows: dict[str, Any]) -> Iterator[_Spec]:
    door = "the net door (its own user); the kernel gives the caller no other route"
    for role, entries in rows.get("allow", {}).items():
        yield _Spec("net.allow", f"{role} may reach {', '.join(entries) or 'nothing'}", BOUNDARY, door, _netns)
    yield _Spec("net.sni", "a CONNECT tunnel's TLS SNI must equal its host", BOUNDARY, door, _netns)
    yield _Spec("net.addresses", "refuses private, loopback, link-local, CGNAT and embedded-v4 addresses; "
                "dials exactly the address it checked", BOUNDARY, door, _netns)
    literal_roles = ", ".join(rows.get("allow_ip_literals", [])) or "no role"
    yield _Spec("net.ip_literals", f"IP literals allowed for {literal_roles}", BOUNDARY, door, _netns)


def _keys_rows(rows: dict[str, Any]) -> Iterator[_Spec]:
    for name, secret in rows.get("secrets", {}).items():
        yield _Spec("keys.secrets", f"{name} (from {secret['from']}): sealed to {', '.join(secret['roles'])} "
                    f"for {', '.join(secret['hosts'])}, never in clear", BOUNDARY,
                    "the keys door (its own user)", _root)


def _shell_rows(rows: dict[str, Any], manifest: Manifest) -> Iterator[_Spec]:
    reads = "reads the workspace directly (never writes it)" if rows["workspace"] == "read" else \
        "has no access to the workspace"
    yield _Spec("shell.workspace", f"commands it runs {reads}", BOUNDARY, "the kernel (Landlock)",
                _landlock(1, "workspace rules"))
    route = "only through the net door's proxy" if ("shell", "net") in manifest.edges else "nowhere"
    yield _Spec("shell.egress", f"commands reach the network {route}", BOUNDARY,
                "the kernel (network namespace)", _netns)


def _model_rows(rows: dict[str, Any]) -> Iterator[_Spec]:
    door = "the model door (its own user)"
    yield _Spec("model.upstream", f"calls only {rows['upstream']}", BOUNDARY, door, _root)
    yield _Spec("model.secret", f"uses secret {rows['secret']} from keys; the app never sees it", BOUNDARY,
                door, _root)
    yield _Spec("model.budget_microusd", f"refuses calls beyond {rows['budget_microusd']} micro-USD",
                BOUNDARY, door, _root)


def _door_rows(manifest: Manifest, role: str) -> Iterator[_Spec]:
    rows = manifest.door_rows(role)
    if role == "fs":
        yield from _fs_rows(rows, manifest.workspace)
    elif role == "net":
        yield from _net_rows(rows)
    elif role == "keys":
        yield from _keys_rows(rows)
    elif role == "shell":
        yield from _shell_rows(rows, manifest)
    elif role == "model":
        yield from _model_rows(rows)


# --- components -----------------------------------------------------------------------------------


def _component(manifest: Manifest, role: str) -> ComponentPlan:
    rows = manifest.door_rows(role)
    # The same paths launcher/policy/confine_plan.py hands to Landlock, in words where they are the system's.
    private = f"{RUN_ROOT}/<sid>/{role}"
    system = "system directories (/usr, /etc, /proc, a few devices) and this Python installation"
    reads: tuple[str, ...] = (system, private)
    writes: tuple[str, ...] = ()
    executes: tuple[str, ...] = ()
    connects: tuple[str, ...] = tuple(f"{server} door (mTLS)" for server in manifest.edges_out(role))
    net_allow = manifest.door_rows("net").get("allow", {})
    if role == "app":
        reads = (*manifest.app.files_read, *reads)
        writes = (f"{private}/tmp (its TMPDIR, never executable)",)
        executes = ("system programs and this Python", *manifest.app.files_exec)
        connects = (*connects, *(f"{entry} via the net door" for entry in net_allow.get("app", [])))
    elif role == "fs":
        reads, writes = (manifest.workspace, *reads), (manifest.workspace,)
    elif role == "net":
        connects = (*connects, *sorted({entry for entries in net_allow.values() for entry in entries}))
    elif role == "keys":
        reads = (*(secret["from"] for secret in rows.get("secrets", {}).values()), *reads)
    elif role == "shell":
        reads = ((manifest.workspace,) if rows["workspace"] == "read" else ()) + reads
        executes = ("system programs",)
        connects = (*connects, *(f"{entry} via the net door" for entry in net_allow.get("shell", [])))
    elif role == "model":
        connects = (*connects, rows["upstream"])
    memory_mb, pids = manifest.process_limits(role)
    return ComponentPlan(role, reads, writes, executes, connects, manifest.edges_in(role),
                         manifest.edges_out(role), memory_mb, pids)


def build_plan(manifest: Manifest, facts: KernelFacts) -> Plan:
    """Every row of `manifest` with its barrier kind, holder, and whether it holds on a kernel with `facts`."""
    specs: list[tuple[str, _Spec]] = [("session", _Spec(
        "session.ttl", f"the launcher ends the session after {manifest.session.ttl_s} s", BOUNDARY,
        "the launcher (root)", _always))]
    for role in manifest.roles:
        specs.extend((role, spec) for spec in _confinement(manifest, role))
        specs.extend((role, spec) for spec in _door_rows(manifest, role))
    return Plan(
        sha256=manifest.sha256, session=manifest.session.name, trust_domain=manifest.session.trust_domain,
        ttl_s=manifest.session.ttl_s, workspace=manifest.workspace,
        components=tuple(_component(manifest, role) for role in manifest.roles),
        rows=tuple(_judge(component, spec, facts) for component, spec in specs),
        not_covered=_not_covered(manifest, facts),
    )


def _not_covered(manifest: Manifest, facts: KernelFacts) -> tuple[str, ...]:
    gaps = []
    if manifest.app.files_read and facts.landlock_abi < 9:
        gaps.append("a world-writable Unix socket that appears inside app.files.read after the session starts is "
                    f"reachable: Landlock ABI {facts.landlock_abi} does not govern connect() (ABI 9's RESOLVE_UNIX "
                    "does); one present at start refuses the session")
    return tuple(gaps)


def render_plan(plan: Plan) -> str:
    """The plan as plain text for a person (no colour, no terminal codes)."""
    lines = [f"session {plan.session} (trust domain {plan.trust_domain}, ttl {plan.ttl_s} s)",
             f"workspace {plan.workspace}", f"manifest {plan.sha256}", ""]
    for component in plan.components:
        lines.append(f"{component.role}: memory {component.max_memory_mb} MB, {component.max_pids} pids")
        for label, items in (("reads", component.reads), ("writes", component.writes),
                             ("executes", component.executes), ("connects to", component.connects),
                             ("edges out", component.edges_out), ("edges in", component.edges_in)):
            lines.append(f"  {label:<12} {', '.join(items) or '-'}")
    lines += ["", "rows:"]
    for row in plan.rows:
        state = "held" if row.held else "UNHELD"
        lines.append(f"  {row.component:<8} {row.row_id:<22} {row.kind:<11} {state:<7} {row.meaning}")
        lines.append(f"  {'':<8} {'':<22} {'':<11} {'':<7} by {row.held_by}"
                     + ("" if row.held else f"; unheld: {row.why_unheld}"))
    lines += ["", f"{plan.unheld_count} of {len(plan.rows)} rows unheld on this machine"]
    lines += [f"not covered: {gap}" for gap in plan.not_covered]
    return "\n".join(lines)
