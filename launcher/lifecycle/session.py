"""One session, start to end: create, spawn doors, spawn the app, supervise, tear down (DESIGN.md 3–9)."""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from doors import SecretFingerprint
from launcher.kernel.confine import ConfinementSpec
from launcher.kernel.fuse_mount import WorkspaceMount, make_workspace_mount
from launcher.kernel.mountns import FuseAttach
from launcher.kernel.probe_facts import KernelFacts
from launcher.lifecycle.audit_cap import AuditCap
from launcher.lifecycle.component_spec import spec_of
from launcher.lifecycle.create import Resources, SessionBuilder, ensure_root_dirs, remove_empty_roots
from launcher.lifecycle.early_signals import EarlySignals
from launcher.lifecycle.home_seed import read_home_seed, write_home_seed
from launcher.lifecycle.journal import Journal, RemovalError
from launcher.lifecycle.journal_removers import process_starttime
from launcher.lifecycle.model_spend import ModelSpend
from launcher.lifecycle.path_owners import owners_to_avoid
from launcher.lifecycle.preflight import (
    SOCKET_SCAN_LIMIT,
    refuse_reachable_sockets,
    refuse_unreachable_python,
    refuse_workspace_not_the_callers,
    workspace_owner,
)
from launcher.lifecycle.preflight_paths import Pins, resolve_paths
from launcher.lifecycle.preflight_sealed import SecretSources, open_secret_sources
from launcher.lifecycle.spawn import (
    Spawned,
    door_main,
    exit_code_of,
    import_door_code,
    single_threaded,
    spawn_app,
    spawn_door,
)
from launcher.lifecycle.supervise import Ending, Supervisor
from launcher.manifest import Manifest
from launcher.policy.confine_plan import python_paths
from launcher.policy.confinement import confinement_of
from launcher.policy.contracts import door_contract, door_fds, secret_names
from launcher.policy.environment import app_env, door_env
from launcher.policy.home_seed import HomeSeed, seed_budget
from launcher.policy.layout import SessionLayout
from launcher.policy.scratch import scratch_of
from launcher.policy.verdict import app_end_words, app_verdict
from pki.vocabulary import AUDIT_ROOT, DOOR_ORDER, EXIT_FAIL_CLOSED, new_sid

if TYPE_CHECKING:
    # Needed only once the doors are ready (the app's stdio, the audit log that opens after the last fork): imported
    # there, not with the launcher's modules (~8-16 ms; docs/decisions/bench.md, "readyquick").
    from launcher.lifecycle import audit as audit_mod
    from launcher.lifecycle.app_stdio import AppStdio

READY_TIMEOUT_S = 20.0
STOP_GRACE_S = 3.0


@dataclass(frozen=True)
class RunOptions:
    audit_root: str = AUDIT_ROOT
    ready_timeout_s: float = READY_TIMEOUT_S
    # target fd → fd to give the app; None: 0, 1, 2 relayed by the launcher (a pty where they are a terminal,
    # pipes elsewhere: launcher/lifecycle/app_stdio.py)
    app_stdio: Mapping[int, int] | None = None
    # The caller prints on stdout after the app (run --json): a line the app left unfinished there is ended.
    summary_on_stdout: bool = False
    app_env_extra: Callable[[SessionInfo], dict[str, str]] | None = None
    progress: Callable[[str], None] | None = None
    # sharness-launchd: told the sid once the journal exists; its caller must still own workspace and home seed
    on_journaled: Callable[[str], None] | None = None
    caller_uid: int | None = None


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
    app_exit_code: int | None = None  # the app's own code, when its exit ended the session (exit_code may differ)
    audit_dir: str = ""
    audit_public_key: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    teardown_errors: list[str] = field(default_factory=list)
    model_spend: ModelSpend | None = None  # with the model door: what it reported spending, beside the budget


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
        self._stdio: AppStdio | None = None
        self._exec_witness: int | None = None  # read end: one byte once the app's child is confined, at execve
        self._pins: Pins = {}  # what each path the manifest names resolved to before anything was created
        self._secret_fds = SecretSources()  # the keys door's sources, opened as root, never read here
        self._kept_secrets: SecretFingerprint | None = None  # the keys door's fingerprint of them (no value)
        self._home_seed = HomeSeed()  # app.home_seed as read before anything was created
        # The workspace's FUSE mount (app.workspace "mount"): its device goes to the fs door, its mount to the app.
        self._workspace_mount: WorkspaceMount | None = None
        model_rows = manifest.door_rows("model")
        self._model_spend = ModelSpend(int(model_rows["budget_microusd"])) if model_rows else None
        self._audit_cap = AuditCap(manifest.session.max_audit_mb)

    # -- audit: buffered until the log exists (its signing key is made after every fork) --
    def audit(self, event: str, fields: Mapping[str, object]) -> None:
        record = {**fields, "event": event, "t_ms": round((time.monotonic() - self._t0) * 1000, 1)}
        if self._model_spend is not None and event == "door.event" and fields.get("role") == "model":
            self._model_spend.note(fields)
        if self._audit_log is None:
            self._pending_audit.append(record)
        else:
            self._write_audit(record)

    def _write_audit(self, record: dict[str, object]) -> None:
        from launcher.lifecycle import audit as audit_mod  # the log is open: imported by _open_audit_log

        assert self._audit_log is not None
        role, log = str(record.get("role", "")), self._audit_log
        try:
            log.append(record)
        except audit_mod.AuditRefused as refused:
            # A door's event that would put a secret (or a forged chain field) in the log is replaced, not lost.
            log.append({"event": "audit.refused", "role": role, "where": refused.where, "rule": refused.rule})
        except (TypeError, ValueError) as exc:
            log.append({"event": "audit.refused", "role": role, "where": "event", "rule": type(exc).__name__})

    def _commit_audit(self) -> Ending | None:
        return self._audit_cap.commit(self._audit_log)  # once per supervisor round: one fsync for its lines

    def _progress(self, text: str) -> None:
        if self.options.progress is not None:
            self.options.progress(text)

    def _mark(self, name: str) -> None:
        self._timings[name] = round((time.monotonic() - self._t0) * 1000, 2)

    def run(self) -> SessionResult:
        """Create, run and tear down the session. PreflightError (nothing created) when it cannot start."""
        self._pins = resolve_paths(self.manifest, self.layout, python_paths())
        fs_owner = workspace_owner(self.manifest.workspace) if "fs" in self.manifest.roles else None
        refuse_workspace_not_the_callers(self.manifest.workspace, self._pins, fs_owner, self.options.caller_uid)
        avoid_ids = owners_to_avoid(self.manifest)
        app_paths = (*self.manifest.app.files_read, *self.manifest.app.files_exec)
        refuse_unreachable_python(python_paths(), (*app_paths, self.manifest.workspace))
        scan = refuse_reachable_sockets(app_paths, self.facts.landlock_abi)
        if scan is not None and not scan.complete:
            self._progress(f"app.files.read holds more than {SOCKET_SCAN_LIMIT} entries: sockets past them were not "
                           "checked (a world-writable socket there would be reachable)")
        self._read_home_seed()
        if "keys" in self.manifest.roles:
            self._secret_fds = open_secret_sources(self.manifest.door_rows("keys").get("secrets", {}))
        ensure_root_dirs(self.layout)
        early = EarlySignals()  # from here on an end signal ends the session in order, never the launcher alone
        journal = Journal.create(self.layout.sid, root=self.layout.sessions_root)
        if self.options.on_journaled is not None:
            self.options.on_journaled(self.layout.sid)
        result = SessionResult(sid=self.layout.sid, exit_code=EXIT_FAIL_CLOSED, reason="")
        resources: Resources | None = None
        supervisor: Supervisor | None = None
        ending: Ending | None = None
        try:
            self.audit("session.start", {"sid": self.layout.sid, "manifest": self.manifest.sha256,
                                         "roles": list(self.manifest.roles)})
            resources = SessionBuilder(self.manifest, self.layout, journal, fs_owner, avoid_ids,
                                       functools.partial(import_door_code, self.manifest.roles,
                                                         self.manifest.app.mounts_workspace)).build()
            self._mark("created")
            supervisor = Supervisor(self.audit, on_round_end=self._commit_audit, early=early)
            ending = self._start(resources, supervisor, journal)
        except BaseException as exc:
            ending = Ending(f"the launcher failed: {type(exc).__name__}: {exc}", EXIT_FAIL_CLOSED)
            if not isinstance(exc, Exception):
                raise
        finally:
            try:
                self._finish(result, ending, supervisor, resources, journal)
            finally:
                early.restore()
                self._secret_fds.close()
                if self._workspace_mount is not None:
                    self._workspace_mount.close()
                if self._stdio is not None:  # after teardown: the app's last output, then the person's terminal back
                    self._stdio.close(frozenset({1, 2}) if self.options.summary_on_stdout else frozenset({2}))
        return result

    def _start(self, resources: Resources, supervisor: Supervisor, journal: Journal) -> Ending:
        doors = tuple(role for role in DOOR_ORDER if role in self.manifest.roles)
        if not single_threaded():
            raise RuntimeError("the launcher has more than one thread: forking a door now could copy a held lock")
        # The keys door first when it keeps secrets: the fs and net doors' contracts hold its fingerprint of them.
        first = ("keys",) if "keys" in doors and secret_names(self.manifest) else ()
        ending = self._spawn_doors(first, resources, supervisor, journal)
        self._mark("keys_ready")
        self._kept_secrets = supervisor.kept_fingerprint()
        if ending is None and first and self._kept_secrets is None:
            return Ending("the keys door said ready without its fingerprint of the kept secrets", EXIT_FAIL_CLOSED)
        ending = ending or self._spawn_doors(tuple(r for r in doors if r not in first), resources, supervisor, journal)
        resources.release_door_handles()
        self._secret_fds.close()  # the keys door holds them now
        self._mark("doors_ready")
        if ending is not None:
            return ending
        self._progress(f"session {self.layout.sid}: {len(doors)} doors ready")
        info = SessionInfo(self.layout, {role: supervisor.pid_of(role) for role in supervisor.roles})
        app = self._spawn_app(resources, info)
        journal.record("pid", f"{app.pid}:{process_starttime(app.pid)}")
        supervisor.watch(app)
        if self._stdio is not None:
            supervisor.add_io(self._stdio, (signal.SIGWINCH,))
        self._mark("app_started")
        self._open_audit_log()
        self.audit("app.start", {"pid": app.pid, "argv0": self.manifest.app.argv[0]})
        deadline = self._t0 + self.manifest.session.ttl_s
        return supervisor.run_until_end("app", deadline)

    def _spawn_doors(self, doors: tuple[str, ...], resources: Resources, supervisor: Supervisor,
                     journal: Journal) -> Ending | None:
        started: list[Spawned] = []
        try:
            for door in doors:
                self._progress(f"session {self.layout.sid}: starting the {door} door")
                spawned = self._spawn_door(door, resources)
                supervisor.watch(spawned)
                started.append(spawned)
        finally:
            # Their pids with one fsync after the batch's last fork, so no door forks after a disk flush for the one
            # before it (0.5 ms here, up to 21 ms with the disk shared). A door not yet recorded when the launcher
            # dies is in its journaled cgroup, which the sweep empties by killing, or, before it joins, dies of its
            # parent-death signal.
            journal.record_all([("pid", f"{door.pid}:{process_starttime(door.pid)}") for door in started])
        return supervisor.wait_ready(doors, self.options.ready_timeout_s)

    def _read_home_seed(self) -> None:
        scratch = scratch_of(self.manifest, "app", self.layout)
        if self.manifest.app.home_seed is not None and scratch is not None:
            budget = seed_budget(scratch.size_bytes, scratch.inodes)
            self._home_seed = read_home_seed(self.manifest.app.home_seed, budget, self.options.caller_uid)

    def _open_audit_log(self) -> None:
        from launcher.lifecycle import audit as audit_mod
        from launcher.lifecycle import audit_keys

        self._audit_log = audit_mod.AuditLog.create(f"{self.options.audit_root}/{self.layout.sid}", self.layout.sid)
        audit_keys.register(self.options.audit_root, self.layout.sid, self._audit_log.public_key_pem.encode())
        if self._kept_secrets is not None:  # before the buffered lines: none of them may hold a kept secret either
            self._audit_log.forbid_fingerprint(self._kept_secrets)
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
                    unstick = functools.partial(self._unstick_app, supervisor) if role == "app" else None
                    status = supervisor.stop(role, STOP_GRACE_S, unstick)
                    self.audit("process.end", {"role": role, "wait_status": status})
            supervisor.drain_statuses()
            supervisor.close()
        if resources is not None:
            resources.close()
        ending, app_exit_code = self._verdict(ending)
        self.audit("session.end", {"reason": ending.reason, "exit_code": ending.exit_code,
                                   "app_exit_code": app_exit_code})
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
        result.app_exit_code = app_exit_code
        result.audit_dir = f"{self.options.audit_root}/{self.layout.sid}"
        result.audit_public_key = public_key
        result.timings_ms = dict(self._timings)
        result.teardown_errors = errors
        result.model_spend = self._model_spend

    def _unstick_app(self, supervisor: Supervisor) -> None:
        """The app outlived its SIGKILL: a call of it waits on a FUSE request the fs door read and never answered
        (the kernel lets no signal end that wait). Stopping the fs door closes the mount's device, which aborts
        the connection and ends every such wait (ECONNABORTED), so the app can die and the session end."""
        holder = "fs" if self.manifest.app.mounts_workspace and "fs" in supervisor.roles else None
        self.audit("process.stuck", {"role": "app", "after": "SIGKILL",
                                     "stopping": holder or "nothing"})
        if holder is not None:
            supervisor.stop(holder, STOP_GRACE_S)

    def _verdict(self, ending: Ending) -> tuple[Ending, int | None]:
        """The app's own exit, once it reached execve: in words that claim nothing (its 205 is not a confinement
        step's), and never one of the launcher's codes (launcher/policy/verdict.py)."""
        status = ending.app_status
        if status is None or not self._exec_reached():
            return ending, None
        signal_number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        exit_status = None if signal_number is not None else os.WEXITSTATUS(status)
        verdict = app_verdict(exit_code_of(status), app_end_words(exit_status, signal_number))
        return Ending(verdict.reason, verdict.exit_code, app_status=status), verdict.app_exit_code

    def _exec_reached(self) -> bool:
        if self._exec_witness is None:
            return False
        try:
            return os.read(self._exec_witness, 1) == b"x"
        except BlockingIOError:
            return False
        finally:
            os.close(self._exec_witness)
            self._exec_witness = None

    # -- spawning --
    def spec(self, role: str, resources: Resources, env: dict[str, str], keep_fds: tuple[int, ...],
             workspace_mount: FuseAttach | None = None) -> ConfinementSpec:
        """What the kernel is given for `role`: its confinement (policy) plus the session's ids, netns and cgroup."""
        resolv_conf = os.path.realpath("/etc/resolv.conf")
        confinement = confinement_of(self.manifest, role, self.layout, python_paths(), resolv_conf)
        return spec_of(confinement, resources, self.facts.landlock_abi, env, keep_fds, self._pins, workspace_mount)

    def _mount_for_fs(self, door: str, resources: Resources) -> WorkspaceMount | None:
        """The workspace's FUSE mount, made as the fs door is spawned (app.workspace "mount", where FUSE is)."""
        if door != "fs" or not self.manifest.app.mounts_workspace or not self.facts.fuse:
            return None
        self._workspace_mount = make_workspace_mount(resources.uids["fs"], resources.gids["fs"])
        return self._workspace_mount

    def _spawn_door(self, door: str, resources: Resources) -> Spawned:
        assert resources.minted is not None
        mount = self._mount_for_fs(door, resources)
        fds = door_fds(door, resources.proxy_listeners, secret_names(self.manifest), resources.model_listeners,
                       sealed=self._secret_fds.machine_key is not None, mount=mount is not None,
                       egress=resources.egress_memfd is not None)
        handles = {fds.svid: resources.svid_memfds[door], fds.door: resources.listeners[door].fileno()}
        if fds.mount is not None and mount is not None:
            handles[fds.mount] = mount.device_fd
        if fds.egress is not None and resources.egress_memfd is not None:
            handles[fds.egress] = resources.egress_memfd
        handles.update({fd: resources.proxy_listeners[client].fileno() for client, fd in fds.proxies.items()})
        handles.update({fd: resources.model_listeners[client].fileno() for client, fd in fds.models.items()})
        handles.update({fd: self._secret_fds.fds[name] for name, fd in fds.secrets.items()})
        if fds.machine_key is not None and self._secret_fds.machine_key is not None:
            handles[fds.machine_key] = self._secret_fds.machine_key
        kept = self._kept_secrets.to_json() if self._kept_secrets is not None else None
        owner = (resources.uids["app"], resources.gids["app"]) if mount is not None else None
        contract = door_contract(self.manifest, door, self.layout.sid, resources.minted.bundle_pem.decode(), fds,
                                 resources.minted.not_after, kept, owner, resources.minted.egress_ca_pem)
        spec = self.spec(door, resources, door_env(), fds.keep)
        try:
            return spawn_door(door, spec, handles, lambda: door_main(contract))
        finally:
            if mount is not None:  # the door holds the device now: its death must end the FUSE connection
                mount.close_device()

    def _app_env(self, info: SessionInfo) -> dict[str, str]:
        env = app_env(self.manifest, self.layout, sys.prefix)
        if self.options.app_env_extra is not None:
            env.update(self.options.app_env_extra(info))
        return env

    def _spawn_app(self, resources: Resources, info: SessionInfo) -> Spawned:
        # A byte on this pipe, written as the child's last act before execve (its end closes on exec), tells the
        # app's own exit codes from its confinement's, whatever code the app picks.
        self._exec_witness, witness = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            mount = self._workspace_mount
            attach = FuseAttach(self.manifest.workspace, mount.mount_fd) if mount is not None else None
            spec = self.spec("app", resources, self._app_env(info), (0, 1, 2, witness), attach)
            stdio = self.options.app_stdio
            if stdio is None:
                from launcher.lifecycle.app_stdio import AppStdio

                self._stdio = AppStdio.open()
                stdio = self._stdio.app_stdio()
            relay_setup = self._stdio.child_setup if self._stdio is not None else None
            seed, home = self._home_seed, self.layout.home_dir("app")

            def at_execve() -> None:
                if relay_setup is not None:
                    relay_setup()
                if seed.entries:  # as the app's user, confined: the copy is its own, in its scratch
                    write_home_seed(seed, home)
                os.write(witness, b"x")

            spawned = spawn_app(self.manifest.app.argv, spec, dict(stdio), at_execve)
        finally:
            os.close(witness)
            if self._workspace_mount is not None:  # attached in the app's mount namespace, or never
                self._workspace_mount.close_mount()
        if self._stdio is not None:
            self._stdio.app_started()
        return spawned
