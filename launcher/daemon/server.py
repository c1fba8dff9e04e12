"""sharness-launchd's loop: one thread, one selector over the listener, each connection, each session's runner
and caller pidfds, and the signal pipe. A request is read whole within its deadline, gated, audited, then acted
on: a session runs in a runner forked from this process (launcher/daemon/runner.py), so the daemon stays
single-threaded and nothing a session does can stall it. SIGTERM ends each session in start order, then exits.
SIGHUP (`systemctl reload`) reads the policy again: requests from then on are judged by it, running sessions keep
going, and a policy that cannot be loaded is refused and audited while the one in force stays.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from launcher.daemon.admission import gate_after_reach, gate_before_reach, unchecked
from launcher.daemon.deputy import Caller, Load, Refusal
from launcher.daemon.peer import peer_caller, peer_pidfd
from launcher.daemon.policy import LaunchdPolicy, PolicyError
from launcher.daemon.protocol import FrameReader, ProtocolError, RunRequest, WinchRequest, parse_request
from launcher.daemon.queries import answer_query
from launcher.daemon.reach import CHECK_TIMEOUT_S, ReachCheck, reap_abandoned
from launcher.daemon.records import DaemonRecords, log_line
from launcher.daemon.refusal_rate import RefusalRate
from launcher.daemon.runner import run_session
from launcher.daemon.sessions import Running, SessionTable
from launcher.daemon.systemd import Notifier
from launcher.daemon.wire import close_fds, receive_available, send_bounded
from launcher.manifest import Manifest
from pki.vocabulary import EXIT_SIGNAL_BASE, EXIT_UNAVAILABLE, EXIT_USAGE

REQUEST_DEADLINE_S = 5.0  # a whole request, from accept: a slow client is refused, not waited for
MAX_PENDING = 64  # connections still sending their request; more are refused at once
# ... and of one uid: the socket is 0666, so one local user holding 64 idle connections would shut out everyone
MAX_PENDING_PER_UID = 8
STOP_WAIT_S = 30.0  # how long SIGTERM waits for one session's own teardown before it kills its runner
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_RELOAD_SIGNAL = signal.SIGHUP


@dataclass(eq=False)
class Pending:
    conn: socket.socket
    caller: Caller
    client_pidfd: int | None
    deadline: float
    reader: FrameReader = field(default_factory=FrameReader)
    fds: list[int] = field(default_factory=list)
    # A run request whose paths are being checked as the caller: the request, its manifest, the checker.
    checking: tuple[RunRequest, Manifest, ReachCheck] | None = None


class Daemon:
    """The listener, the sessions, the records; `serve()` runs until SIGTERM and returns the exit code."""

    def __init__(self, listener: socket.socket, policy: LaunchdPolicy, records: DaemonRecords,
                 notifier: Notifier, watchdog_s: float | None = None,
                 read_policy: Callable[[], LaunchdPolicy] | None = None) -> None:
        self.listener = listener
        self.policy = policy
        self.read_policy = read_policy  # the policy again, from where it came (PolicyError if it will not load)
        self.records = records
        self.notifier = notifier
        self.watchdog_s = watchdog_s
        self.sessions = SessionTable()
        self.pending: list[Pending] = []
        self.selector = selectors.DefaultSelector()
        self._signal_r, self._signal_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stopping = False
        self.request_deadline_s = REQUEST_DEADLINE_S
        self._next_watchdog = time.monotonic()
        self.refusal_rate = RefusalRate()

    # -- the loop --
    def serve(self) -> int:
        listener_blocking = self.listener.getblocking()
        self.listener.setblocking(False)
        signal.set_wakeup_fd(self._signal_w)
        for signum in (*_STOP_SIGNALS, _RELOAD_SIGNAL):
            signal.signal(signum, lambda *_: None)
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.selector.register(self._signal_r, selectors.EVENT_READ, ("signal", None))
        self.records.event("launchd.start", {"pid": os.getpid(), "policy": self.policy.sha256,
                                             "max_sessions": self.policy.max_sessions})
        self.notifier.notify(READY=1, STATUS=self._status())
        try:
            while not self._stopping:
                self._round()
            self._stop_all()
        finally:
            self.listener.setblocking(listener_blocking)
            self._write_counted(time.monotonic(), every=True)
            self.records.event("launchd.stop", {"pid": os.getpid()})
            self.records.close()
        return 0

    def _round(self) -> None:
        now = time.monotonic()
        if self.watchdog_s is not None and now >= self._next_watchdog:
            self.notifier.notify(WATCHDOG=1)
            self._next_watchdog = now + self.watchdog_s
        deadlines = [p.deadline for p in self.pending]
        if self.watchdog_s is not None:
            deadlines.append(self._next_watchdog)
        if (summary_due := self.refusal_rate.next_due()) is not None:
            deadlines.append(summary_due)
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        for key, _ in self.selector.select(timeout):
            kind, subject = key.data
            try:
                getattr(self, f"_on_{kind}")(subject)
            except Exception as exc:  # one request's failure is its own, never the daemon's end
                log_line("launchd.error", where=kind, error=f"{type(exc).__name__}: {exc}")
                self._abandon(subject)
        now = time.monotonic()
        for pending in [p for p in self.pending if p.deadline <= now]:
            if pending.checking is not None:
                self._refuse(pending, unchecked(f"the path checker gave no answer within {CHECK_TIMEOUT_S:g} s"),
                             op="run", manifest=pending.checking[0].expect_hash)
            else:
                self._refuse(pending, Refusal(f"the request was not whole within {self.request_deadline_s:g} s",
                                              "send the whole request at once", EXIT_USAGE), op="unknown")
        reap_abandoned()
        self._write_counted(now)

    def _on_signal(self, _: None) -> None:
        with contextlib.suppress(BlockingIOError):
            received = os.read(self._signal_r, 64)
            if any(signum in received for signum in _STOP_SIGNALS):
                self._stopping = True
            elif _RELOAD_SIGNAL in received:
                self._reload()

    def _reload(self) -> None:
        """The policy read again; kept as it was, and the refusal audited with its words, if it will not load."""
        if self.read_policy is None:
            return
        self.notifier.notify(RELOADING=1, MONOTONIC_USEC=time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)
        fields: dict[str, object]
        try:
            policy = self.read_policy()
        except PolicyError as error:
            fields = {"pointer": error.pointer, "message": error.message, "hint": error.hint,
                      "kept": self.policy.sha256}
            self.records.event("launchd.policy_reload_refused", fields)
        else:
            fields = {"from": self.policy.sha256, "to": policy.sha256, "max_sessions": policy.max_sessions}
            self.policy = policy
            self.records.event("launchd.policy_reloaded", fields)
        self.notifier.notify(READY=1, STATUS=self._status())

    def _on_accept(self, _: None) -> None:
        try:
            conn, _address = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        conn.setblocking(False)
        caller = peer_caller(conn)
        pending = Pending(conn, caller, peer_pidfd(conn), time.monotonic() + self.request_deadline_s)
        if len(self.pending) >= MAX_PENDING:
            self._refuse(pending, Refusal(f"{MAX_PENDING} requests are being read already", "try again"), "unknown",
                         registered=False)
            return
        if sum(1 for other in self.pending if other.caller.uid == caller.uid) >= MAX_PENDING_PER_UID:
            self._refuse(pending, Refusal(f"uid {caller.uid} has {MAX_PENDING_PER_UID} requests being read already",
                                          "send each request whole; try again"), "unknown", registered=False)
            return
        self.pending.append(pending)
        self.selector.register(conn, selectors.EVENT_READ, ("request", pending))

    def _on_request(self, pending: Pending) -> None:
        try:
            if not receive_available(pending.conn, pending.reader, pending.fds):
                if pending.reader.pending == 0 and not pending.fds:  # connected and left: no request was made
                    self._forget_pending(pending)
                    self._close_conn(pending.conn, pending.client_pidfd)
                    return
                raise ProtocolError("the connection closed before its request was whole")
            frame = pending.reader.next_frame()
            if frame is None:
                return
            request = parse_request(frame)
        except BlockingIOError:
            return
        except (ProtocolError, OSError) as exc:
            self._refuse(pending, Refusal(f"a malformed request: {exc}", "use `sharness-launch` as the client",
                                          EXIT_USAGE), op="unknown")
            return
        if isinstance(request, RunRequest):
            self._run(pending, request)
        elif isinstance(request, WinchRequest):
            self._refuse(pending, Refusal("winch outside a session", "send it on a session's connection",
                                          EXIT_USAGE), op="winch")
        else:
            self._forget_pending(pending)
            close_fds(pending.fds)
            answer_query(self, pending.conn, pending.caller, request)
            self._close_conn(pending.conn, pending.client_pidfd)

    # -- run --
    def _load(self, caller: Caller) -> Load:
        return Load(callers=self.sessions.of_uid(caller.uid), total=len(self.sessions))

    def _run(self, pending: Pending, request: RunRequest) -> None:
        """Gate the request; its paths are checked by a child the loop waits for (`_on_reach`), never here."""
        verdict = gate_before_reach(self.policy, pending.caller, request, pending.fds, self._load(pending.caller))
        if isinstance(verdict, Refusal):
            self._refuse(pending, verdict, op="run", manifest=request.expect_hash)
            return
        try:
            check = ReachCheck(pending.caller, verdict[1])
        except OSError as exc:
            self._refuse(pending, unchecked(str(exc)), op="run", manifest=request.expect_hash)
            return
        pending.checking, pending.deadline = (request, verdict[0], check), check.deadline
        self._drop(pending.conn)  # the request is whole: nothing more is read from the caller meanwhile
        self.selector.register(check.fd, selectors.EVENT_READ, ("reach", pending))

    def _on_reach(self, pending: Pending) -> None:
        assert pending.checking is not None
        request, manifest, check = pending.checking
        try:
            if not check.feed():
                return
            self._drop(check.fd)
            reach = check.result()
        except OSError as exc:
            self._refuse(pending, unchecked(str(exc)), op="run", manifest=request.expect_hash)
            return
        verdict = gate_after_reach(self.policy, pending.caller, request, manifest, reach, self._load(pending.caller))
        if isinstance(verdict, Refusal):
            self._refuse(pending, verdict, op="run", manifest=request.expect_hash)
            return
        self._start(pending, request, verdict)

    def _start(self, pending: Pending, request: RunRequest, verdict: Manifest) -> None:
        self.records.event("launchd.request", {"op": "run", "verdict": "allowed", **pending.caller.audit_fields(),
                                               "manifest": verdict.sha256, "name": verdict.session.name})
        self._forget_pending(pending)
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            run_session(pending.fds, request.manifest, request.expect_hash, report_w, best_effort=request.best_effort,
                        summary_json=request.json, caller_uid=pending.caller.uid,
                        close_daemon=lambda: self.close_in_child(pending))
        os.close(report_w)
        close_fds(pending.fds)
        os.set_blocking(report_r, False)
        session = Running(pending.conn, pending.caller, pending.client_pidfd, pid, os.pidfd_open(pid), report_r,
                          verdict.sha256, verdict.session.name)
        self.sessions.add(session)
        self.selector.register(session.conn, selectors.EVENT_READ, ("client", session))
        self.selector.register(session.runner_pidfd, selectors.EVENT_READ, ("runner", session))
        self.selector.register(report_r, selectors.EVENT_READ, ("report", session))
        if session.client_pidfd is not None:
            self.selector.register(session.client_pidfd, selectors.EVENT_READ, ("client_gone", session))
        send_bounded(session.conn, {"type": "accepted", "policy": self.policy.sha256, "pid": pid})
        self.notifier.notify(STATUS=self._status())

    def _on_report(self, session: Running) -> None:
        sid = session.read_report()
        if sid is None and session.report_fd >= 0:
            with contextlib.suppress(BlockingIOError):
                if os.read(session.report_fd, 1) == b"":  # the runner closed it: no sid will come
                    self._drop(session.report_fd)
                    session.report_fd = -1
            return
        if sid is not None and session.sid is None:
            session.sid = sid
            self.records.own(sid, session.caller.uid)
            self.records.event("launchd.session", {"sid": sid, **session.caller.audit_fields(),
                                                   "runner_pid": session.runner_pid})
            self._drop(session.report_fd)
            session.report_fd = -1

    def _on_client(self, session: Running) -> None:
        """The caller's connection while its session runs: window-size changes, or its end."""
        try:
            alive = receive_available(session.conn, session.reader, [])
            while alive and (frame := session.reader.next_frame()) is not None:
                if isinstance(parse_request(frame), WinchRequest):
                    signal.pidfd_send_signal(session.runner_pidfd, signal.SIGWINCH)
        except BlockingIOError:
            return
        except (ProtocolError, OSError):
            alive = False
        if not alive:
            self._drop(session.conn)
            self.end_session(session, "the client went away")

    def _on_client_gone(self, session: Running) -> None:
        if session.client_pidfd is not None:
            self._drop(session.client_pidfd)
            os.close(session.client_pidfd)
            session.client_pidfd = None
        self.end_session(session, "the client process exited")

    def end_session(self, session: Running, why: str) -> None:
        """Ask the session to end in order (its runner's SIGTERM: the launcher's own teardown)."""
        if session.stop_asked:
            return
        session.stop_asked = True
        self.records.event("launchd.stop_session", {"sid": session.sid, "why": why, "runner_pid": session.runner_pid})
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(session.runner_pidfd, signal.SIGTERM)

    def _on_runner(self, session: Running) -> None:
        _, status = os.waitpid(session.runner_pid, 0)
        code = os.waitstatus_to_exitcode(status)
        code = EXIT_SIGNAL_BASE - code if code < 0 else code
        if session.report_fd >= 0:
            self._on_report(session)
        self.records.event("launchd.end", {"sid": session.sid, **session.caller.audit_fields(), "exit_code": code})
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.selector.unregister(session.conn)
        send_bounded(session.conn, {"type": "exit", "code": code, "sid": session.sid})
        for fd in (session.runner_pidfd, session.report_fd):
            if fd >= 0:
                self._drop(fd)
                os.close(fd)
        self.sessions.remove(session)
        self._close_conn(session.conn, session.client_pidfd)
        self.notifier.notify(STATUS=self._status())

    # -- the end --
    def _stop_all(self) -> None:
        self.notifier.notify(STOPPING=1, STATUS="ending every session")
        self._drop(self.listener)
        for pending in list(self.pending):
            self._refuse(pending, Refusal("the daemon is stopping", "try again once it is back", EXIT_UNAVAILABLE),
                         op="unknown")
        for session in self.sessions:
            self.end_session(session, "the daemon is stopping")
            if not _wait_readable(session.runner_pidfd, STOP_WAIT_S):
                signal.pidfd_send_signal(session.runner_pidfd, signal.SIGKILL)
            self._on_runner(session)

    def _abandon(self, subject: object) -> None:
        """After a handler failed: a pending request is closed, a session is asked to end (its runner's exit
        still cleans up)."""
        if isinstance(subject, Pending) and subject in self.pending:
            self._forget_pending(subject)
            close_fds(subject.fds)
            self._close_conn(subject.conn, subject.client_pidfd)
        elif isinstance(subject, Running):
            self.end_session(subject, "the daemon failed handling it")

    # -- helpers --
    def _refuse(self, pending: Pending, refusal: Refusal, op: str, manifest: str | None = None, *,
                registered: bool = True) -> None:
        """Audit the refusal (whole, or counted once the caller's uid has made many: refusal_rate.py), tell the
        caller its words and rows, close everything it brought."""
        if self.refusal_rate.admit(pending.caller.uid, op, refusal.row or refusal.policy_row, time.monotonic()):
            self.records.event("launchd.request", {
                "op": op, "verdict": "refused", **pending.caller.audit_fields(), "manifest": manifest,
                "reason": refusal.reason, "row": refusal.row, "policy_row": refusal.policy_row,
                "exit_code": refusal.exit_code})
        if registered:
            self._forget_pending(pending)
        close_fds(pending.fds)
        send_bounded(pending.conn, {"type": "refused", "reason": refusal.reason, "hint": refusal.hint,
                                    "row": refusal.row, "policy_row": refusal.policy_row,
                                    "exit_code": refusal.exit_code, "words": refusal.words()})
        self._close_conn(pending.conn, pending.client_pidfd)

    def _write_counted(self, now: float, *, every: bool = False) -> None:
        self.records.counted(self.refusal_rate.due(now, every=every))

    def _forget_pending(self, pending: Pending) -> None:
        self.pending.remove(pending)
        self._drop(pending.conn)
        if pending.checking is not None:
            check = pending.checking[2]
            self._drop(check.fd)
            check.close()

    def _drop(self, fileobj: socket.socket | int) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.selector.unregister(fileobj)

    def _close_conn(self, conn: socket.socket, client_pidfd: int | None) -> None:
        self._drop(conn)
        with contextlib.suppress(OSError):
            conn.close()
        if client_pidfd is not None:
            self._drop(client_pidfd)
            with contextlib.suppress(OSError):
                os.close(client_pidfd)

    def _status(self) -> str:
        return f"{len(self.sessions)} session(s) running"

    def close_in_child(self, own: Pending) -> None:
        """In a forked runner: close every object of the daemon's (but `own`'s fds, the caller's stdio), so none
        closes a reused fd number later."""
        own.conn.close()
        if own.client_pidfd is not None:
            os.close(own.client_pidfd)
        self.selector.close()
        self.listener.close()
        self.notifier.close()
        for pending in self.pending:
            pending.conn.close()
            close_fds([pending.checking[2].fd] if pending.checking is not None and pending.checking[2].fd >= 0 else [])
        for session in self.sessions:
            session.conn.close()
            for fd in (session.runner_pidfd, session.report_fd, session.client_pidfd):
                if fd is not None and fd >= 0:
                    os.close(fd)
        for fd in (self._signal_r, self._signal_w):
            os.close(fd)


def _wait_readable(fd: int, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))
