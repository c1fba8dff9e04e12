"""One session, start to end: create, spawn doors, spawn the app, supervise, tear down (DESIGN.md 3–9)."""

from __future__ import annotations

import functools
import gc
import os
import resource
import signal
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import doors.serve
import launcher
from doors import DoorContract
from launcher.kernel.confine import ConfinementSpec
from launcher.kernel.landlock import LandlockRules
from launcher.kernel.probe_facts import KernelFacts
from launcher.kernel.seccomp import FS_DOOR_EXTRA
from launcher.lifecycle import audit as audit_mod
from launcher.lifecycle.create import (
    APP_BUNDLE,
    APP_SVID,
    Resources,
    SessionBuilder,
    ensure_root_dirs,
    remove_empty_roots,
)
from launcher.lifecycle.journal import Journal, RemovalError
from launcher.lifecycle.preflight import SOCKET_SCAN_LIMIT, refuse_reachable_sockets, workspace_owner
from launcher.lifecycle.ptyrelay import PtyRelay
from launcher.lifecycle.spawn import Spawned, single_threaded, spawn_app, spawn_door
from launcher.lifecycle.supervise import Ending, Supervisor
from launcher.manifest import Manifest
from launcher.policy.confine_plan import Allowance, app_allowance, door_allowance
from launcher.policy.layout import PROXY_HOST, PROXY_PORT, SessionLayout, door_client_groups, groups_of
from pki.vocabulary import (
    AUDIT_ROOT,
    DOOR_LISTENER,
    DOOR_ORDER,
    EXIT_FAIL_CLOSED,
    FIRST_LISTENER_FD,
    PROXY_LISTENER_PREFIX,
    SVID_FD,
    new_sid,
)

doors.serve.preload()  # the launcher is the doors' zygote: all their code is imported before any fork

READY_TIMEOUT_S = 20.0
STOP_GRACE_S = 3.0


@dataclass(frozen=True)
class RunOptions:
    audit_root: str = AUDIT_ROOT
    ready_timeout_s: float = READY_TIMEOUT_S
    # target fd → fd to give the app; None: 0, 1, 2, through a pty the launcher relays where they are a terminal
    app_stdio: Mapping[int, int] | None = None
    app_env_extra: Callable[[SessionInfo], dict[str, str]] | None = None
    progress: Callable[[str], None] | None = None


@dataclass(frozen=True)
class SessionInfo:
    """What a running session exposes to whoever started it (hello's probe reads it)."""

    layout: SessionLayout
    pids: dict[str, int]


@dataclass
class SessionResult:
    sid: str
    exit_code: int
    reason: str
    audit_dir: str = ""
    audit_public_key: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    teardown_errors: list[str] = field(default_factory=list)


@functools.cache
def python_paths() -> tuple[str, ...]:
    """What a component needs to read to run this installation's Python: prefixes and the source tree."""
    project = os.path.dirname(os.path.dirname(os.path.abspath(launcher.__file__)))
    paths = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"], project, f"{sys.prefix}/bin"}
    return tuple(sorted(path for path in paths if path not in ("/", "/usr")))


def _starttime(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return fields[19].decode()


def _rules(allowance: Allowance) -> LandlockRules:
    return LandlockRules(
        read=allowance.read,
        write=allowance.write,
        exec=allowance.exec,
        tcp_bind=allowance.tcp_bind,
        tcp_connect=allowance.tcp_connect,
        scope_signals=True,
        scope_abstract_unix=True,
    )


class Session:
    """Runs one verified manifest. Everything it creates is journaled; run() always tears it down."""

    def __init__(self, manifest: Manifest, facts: KernelFacts, options: RunOptions | None = None) -> None:
        self.manifest = manifest
        self.facts = facts
        self.options = options or RunOptions()
        self.layout = SessionLayout(new_sid())
        self._pending_audit: list[dict[str, object]] = []
        self._audit_log: audit_mod.AuditLog | None = None
        self._timings: dict[str, float] = {}
        self._t0 = time.monotonic()
        self._relay: PtyRelay | None = None

    # -- audit: buffered until the log exists (its signing key is made after every fork) --
    def audit(self, event: str, fields: Mapping[str, object]) -> None:
        record = {**fields, "event": event, "t_ms": round((time.monotonic() - self._t0) * 1000, 1)}
        if self._audit_log is None:
            self._pending_audit.append(record)
        else:
            self._write_audit(record)

    def _write_audit(self, record: dict[str, object]) -> None:
        assert self._audit_log is not None
        role = str(record.get("role", ""))
        try:
            self._audit_log.append(record)
        except audit_mod.AuditRefused as refused:
            # A door's event that would put a secret (or a forged chain field) in the log is replaced, not lost.
            self._audit_log.append({"event": "audit.refused", "role": role,
                                    "where": refused.where, "rule": refused.rule})
        except (TypeError, ValueError) as exc:
            self._audit_log.append({"event": "audit.refused", "role": role,
                                    "where": "event", "rule": type(exc).__name__})

    def _progress(self, text: str) -> None:
        if self.options.progress is not None:
            self.options.progress(text)

    def _mark(self, name: str) -> None:
        self._timings[name] = round((time.monotonic() - self._t0) * 1000, 2)

    def run(self) -> SessionResult:
        """Create, run and tear down the session. PreflightError (nothing created) when it cannot start."""
        fs_owner = workspace_owner(self.manifest.workspace) if "fs" in self.manifest.roles else None
        app_paths = (*self.manifest.app.files_read, *self.manifest.app.files_exec)
        scan = refuse_reachable_sockets(app_paths, self.facts.landlock_abi)
        if scan is not None and not scan.complete:
            self._progress(f"app.files.read holds more than {SOCKET_SCAN_LIMIT} entries: sockets past them were not "
                           "checked (a world-writable socket there would be reachable)")
        # Everything is imported by now: keep the collector off these objects, so forked doors share their
        # pages and the launcher's exit does not walk them (96–136 ms → 11 ms, docs/decisions/session-bench.md).
        gc.freeze()
        ensure_root_dirs(self.layout)
        journal = Journal.create(self.layout.sid, root=self.layout.sessions_root)
        result = SessionResult(sid=self.layout.sid, exit_code=EXIT_FAIL_CLOSED, reason="")
        resources: Resources | None = None
        supervisor: Supervisor | None = None
        ending: Ending | None = None
        try:
            self.audit("session.start", {"sid": self.layout.sid, "manifest": self.manifest.sha256,
                                         "roles": list(self.manifest.roles)})
            resources = SessionBuilder(self.manifest, self.layout, journal, fs_owner).build()
            self._mark("created")
            supervisor = Supervisor(self.audit)
            ending = self._start(resources, supervisor, journal)
        except BaseException as exc:
            ending = Ending(f"the launcher failed: {type(exc).__name__}: {exc}", EXIT_FAIL_CLOSED)
            if not isinstance(exc, Exception):
                raise
        finally:
            try:
                self._finish(result, ending, supervisor, resources, journal)
            finally:
                if self._relay is not None:  # after teardown: the app's last output, then the person's terminal back
                    self._relay.close()
        return result

    def _start(self, resources: Resources, supervisor: Supervisor, journal: Journal) -> Ending:
        doors = tuple(role for role in DOOR_ORDER if role in self.manifest.roles)
        if not single_threaded():
            raise RuntimeError("the launcher has more than one thread: forking a door now could copy a held lock")
        for door in doors:
            spawned = self._spawn_door(door, resources)
            journal.record("pid", f"{spawned.pid}:{_starttime(spawned.pid)}")
            supervisor.watch(spawned)
        resources.release_door_handles()
        ending = supervisor.wait_ready(doors, self.options.ready_timeout_s)
        self._mark("doors_ready")
        if ending is not None:
            return ending
        self._progress(f"session {self.layout.sid}: {len(doors)} doors ready")
        info = SessionInfo(self.layout, {role: supervisor.pid_of(role) for role in supervisor.roles})
        app = self._spawn_app(resources, info)
        journal.record("pid", f"{app.pid}:{_starttime(app.pid)}")
        supervisor.watch(app)
        if self._relay is not None:
            supervisor.add_io(self._relay, (signal.SIGWINCH,))
        self._mark("app_started")
        self._open_audit_log()
        self.audit("app.start", {"pid": app.pid, "argv0": self.manifest.app.argv[0]})
        deadline = self._t0 + self.manifest.session.ttl_s
        return supervisor.run_until_end("app", deadline)

    def _open_audit_log(self) -> None:
        self._audit_log = audit_mod.AuditLog.create(f"{self.options.audit_root}/{self.layout.sid}", self.layout.sid)
        pending, self._pending_audit = self._pending_audit, []
        for record in pending:
            self._write_audit(record)

    def _finish(
        self,
        result: SessionResult,
        ending: Ending | None,
        supervisor: Supervisor | None,
        resources: Resources | None,
        journal: Journal,
    ) -> None:
        ending = ending or Ending("the launcher stopped before the session started", EXIT_FAIL_CLOSED)
        if supervisor is not None:
            for role in ("app", *reversed(DOOR_ORDER)):
                if role in supervisor.roles:
                    status = supervisor.stop(role, STOP_GRACE_S)
                    self.audit("process.end", {"role": role, "wait_status": status})
            supervisor.drain_statuses()
            supervisor.close()
        if resources is not None:
            resources.close()
        self.audit("session.end", {"reason": ending.reason, "exit_code": ending.exit_code})
        removal_errors: list[RemovalError] = []
        journal.teardown(removal_errors)
        remove_empty_roots(self.layout.sessions_root, self.layout.run_root)
        errors = [str(error) for error in removal_errors]
        self._mark("torn_down")
        if self._audit_log is None:
            self._open_audit_log()
        assert self._audit_log is not None
        if errors:
            self._audit_log.append({"event": "teardown.errors", "errors": errors[:50]})
        _, public_key = self._audit_log.close()
        result.exit_code = ending.exit_code
        result.reason = ending.reason
        result.audit_dir = f"{self.options.audit_root}/{self.layout.sid}"
        result.audit_public_key = public_key
        result.timings_ms = dict(self._timings)
        result.teardown_errors = errors

    # -- spawning --
    def _door_contract(self, door: str, resources: Resources, listen_fds: dict[str, int]) -> DoorContract:
        assert resources.minted is not None
        rows = dict(self.manifest.door_rows(door))
        if door == "fs":
            rows["workspace"] = self.manifest.workspace
        return DoorContract(
            role=door,
            session_id=self.layout.sid,
            trust_domain=self.manifest.session.trust_domain,
            edges=tuple(sorted(self.manifest.edges)),
            bundle_pem=resources.minted.bundle_pem.decode(),
            rows=rows,
            listen_fds=listen_fds,
            not_after=resources.minted.not_after,
        )

    def _spec(self, role: str, resources: Resources, allowance: Allowance, env: dict[str, str],
              keep_fds: tuple[int, ...], nofile: int) -> ConfinementSpec:
        # The fs door runs as the workspace owner: its cwd is /, and it loses socket() and metadata calls.
        fs_door = role == "fs"
        clients = door_client_groups(self.manifest.edges, self.manifest.roles)
        return ConfinementSpec(
            uid=resources.uids[role],
            gid=resources.gids[role],
            groups=tuple(resources.door_gids[door] for door in groups_of(role, clients)),
            netns_fd=resources.netns_fds.get(role),
            cgroup=resources.cgroups.get(role),
            rlimits={resource.RLIMIT_CORE: (0, 0), resource.RLIMIT_NOFILE: (nofile, nofile)},
            landlock=_rules(allowance),
            landlock_abi=self.facts.landlock_abi,
            seccomp_deny_inet=allowance.deny_inet,
            seccomp_allow_udp=allowance.allow_udp,
            keep_fds=keep_fds,
            env=env,
            cwd="/" if fs_door else self.layout.private_dir(role),
            parent_pid=os.getpid(),
            seccomp_extra=FS_DOOR_EXTRA if fs_door else (),
            mount_keep=self._mount_keep(role, allowance),
        )

    def _mount_keep(self, role: str, allowance: Allowance) -> tuple[str, ...]:
        """What stays visible under the masked directories: the component's own paths and its edges' sockets."""
        sockets = tuple(self.layout.socket_path(server) for client, server in self.manifest.edges if client == role)
        keep = (*allowance.read, *allowance.write, *allowance.exec, *sockets, self.layout.private_dir(role))
        if allowance.allow_udp:  # an egress door's resolver reads resolv.conf, which may point into /run
            keep = (*keep, os.path.realpath("/etc/resolv.conf"))
        return keep

    def _spawn_door(self, door: str, resources: Resources) -> Spawned:
        fds = {SVID_FD: resources.svid_memfds[door], FIRST_LISTENER_FD: resources.listeners[door].fileno()}
        listen_fds = {DOOR_LISTENER: FIRST_LISTENER_FD}
        next_fd = FIRST_LISTENER_FD + 1
        if door == "net":
            for role, listener in sorted(resources.proxy_listeners.items()):
                fds[next_fd] = listener.fileno()
                listen_fds[f"{PROXY_LISTENER_PREFIX}{role}"] = next_fd
                next_fd += 1
        contract = self._door_contract(door, resources, listen_fds)
        rows = {**self.manifest.door_rows(door), **({"workspace": self.manifest.workspace} if door == "fs" else {})}
        allowance = door_allowance(door, self.layout, python_paths(), rows,
                                   may_use_proxy=(door, "net") in self.manifest.edges)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        spec = self._spec(door, resources, allowance, env, tuple(range(next_fd)), 4096)
        return spawn_door(door, spec, fds, lambda: doors.serve.serve(contract))

    def _app_env(self, info: SessionInfo) -> dict[str, str]:
        layout = self.layout
        private = layout.private_dir("app")
        env = {
            "PATH": f"{sys.prefix}/bin:/usr/local/bin:/usr/bin:/bin",
            "HOME": private,
            "TMPDIR": f"{private}/tmp",
            "LANG": "C.UTF-8",
            "SHARNESS_SESSION": layout.sid,
            "SHARNESS_TRUST_DOMAIN": self.manifest.session.trust_domain,
            "SHARNESS_SVID": f"{private}/{APP_SVID}",
            "SHARNESS_BUNDLE": f"{private}/{APP_BUNDLE}",
        }
        for client, server in sorted(self.manifest.edges):
            if client == "app":
                env[f"SHARNESS_DOOR_{server.upper()}"] = layout.socket_path(server)
        if ("app", "net") in self.manifest.edges:
            proxy = f"http://{PROXY_HOST}:{PROXY_PORT}"
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
                env[name] = proxy
        if self.options.app_env_extra is not None:
            env.update(self.options.app_env_extra(info))
        return env

    def _spawn_app(self, resources: Resources, info: SessionInfo) -> Spawned:
        app = self.manifest.app
        allowance = app_allowance(self.layout, python_paths(), app.files_read, app.files_exec,
                                  may_use_proxy=("app", "net") in self.manifest.edges)
        spec = self._spec("app", resources, allowance, self._app_env(info), (0, 1, 2), 1024)
        if self.options.app_stdio is not None:
            return spawn_app(app.argv, spec, dict(self.options.app_stdio))
        self._relay = PtyRelay.open()
        if self._relay is None:  # no terminal among 0, 1, 2: pipes and files are passed as they are
            return spawn_app(app.argv, spec, {0: 0, 1: 1, 2: 2})
        spawned = spawn_app(app.argv, spec, self._relay.app_stdio(), self._relay.child_setup)
        self._relay.app_started()
        return spawned
