"""Wait on a running session: door status messages, door diagnostics, process exits, signals and the TTL.

One selector, no threads: the launcher stays single-threaded so that fork() remains safe. Each round serves
every ready fd a bounded amount: all pending status messages of a door up to STATUS_PER_ROUND, one read of
a door's stderr, one read of the app's output through the pty relay (bounded there), so none starves another.
The round ends with `on_round_end` (the session commits the round's audit lines: one fsync for the group).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from doors import SecretFingerprint
from launcher.lifecycle.app_init import reported_status
from launcher.lifecycle.audit_verify import FORBID_EVENT, LOST_EVENT
from launcher.lifecycle.early_signals import END_SIGNALS, EarlySignals
from launcher.lifecycle.spawn import Spawned, describe_exit, exit_code_of
from launcher.policy.door_diagnostics import DoorDiagnostics
from pki.vocabulary import (
    AUDIT,
    DROPPED_BEFORE,
    EXIT_FAIL_CLOSED,
    EXIT_SIGNAL_BASE,
    EXIT_TTL,
    FATAL,
    FINGERPRINT,
    FORBID,
    LOST,
    MAX_STATUS_BYTES,
    READY,
    decode_status,
)

# Status messages read from one door in one round: more than its socket holds of audit events (167 of 208
# bytes in the default 208 KiB, ~1.3 KiB of kernel memory each), so every event pending when the round
# began; a bound still, since a door with a full queue refills the socket as fast as it is read.
STATUS_PER_ROUND = 256
# After its SIGKILL a process is gone in milliseconds (a pid namespace's init once its members are); one still
# there after this is held by a wait no signal ends (docs/decisions/fs-mount.md, "A request the door has read").
KILLED_EXIT_S = 2.0
KEPT_SECRET_ROLES = frozenset({"keys"})  # who may tell the audit log what to redact (a value, a fingerprint)
FINGERPRINT_EVENT = "keys.fingerprint"
DIAGNOSTICS_READ = 4096  # bytes of a door's stderr read in one round


@dataclass(frozen=True)
class Ending:
    """Why the session ends and the launcher's exit code."""

    reason: str
    exit_code: int
    failed_role: str | None = None
    app_status: int | None = None  # the app's wait status, when its exit ended the session


class IoSource(Protocol):
    """Fds the loop serves besides the session's own: the app's pty relay (launcher/lifecycle/ptyrelay.py)."""

    def fds_to_watch(self) -> Mapping[int, int]: ...  # fd → selectors.EVENT_READ | EVENT_WRITE, asked each step
    def on_ready(self, fd: int, events: int) -> None: ...
    def on_signal(self, signum: int) -> None: ...
    def say(self, line: str) -> None: ...  # one line of the launcher's, inert text, where the person sees it


def say_on_stderr(line: str) -> None:
    """Where the launcher's lines go while no relay stands in for the person's terminal."""
    with contextlib.suppress(OSError):
        os.write(2, line.encode() + b"\n")


class Supervisor:
    """Owns the selector over pidfds, status sockets and the signal wake-up pipe."""

    def __init__(self, on_audit: Callable[[str, dict[str, object]], None],
                 say: Callable[[str], None] = say_on_stderr, *,
                 on_round_end: Callable[[], Ending | None] | None = None, early: EarlySignals | None = None) -> None:
        self._selector = selectors.DefaultSelector()
        self._on_audit = on_audit
        self._on_round_end = on_round_end or (lambda: None)  # an Ending from it ends the session too
        self._say = say
        self._diagnostics: dict[str, tuple[int, DoorDiagnostics]] = {}  # role → (its stderr's read end, its lines)
        self._processes: dict[str, Spawned] = {}
        self._statuses: dict[str, int] = {}
        self._ready: set[str] = set()
        self._fingerprint_parts: list[dict[str, object]] = []
        self._signal_r, self._signal_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._old_wakeup = signal.set_wakeup_fd(self._signal_w)
        self._old_handlers = {sig: signal.signal(sig, lambda *_: None) for sig in END_SIGNALS}
        if early is not None and early.received is not None:  # one that came while the session was created
            os.write(self._signal_w, bytes([early.received]))
        self._selector.register(self._signal_r, selectors.EVENT_READ, ("signal", ""))
        self._io: IoSource | None = None
        self._io_fds: dict[int, int] = {}
        self._io_signals: frozenset[int] = frozenset()

    def close(self) -> None:
        signal.set_wakeup_fd(self._old_wakeup)
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._selector.close()
        for fd, _ in self._diagnostics.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._diagnostics.clear()
        os.close(self._signal_r)
        os.close(self._signal_w)

    def add_io(self, source: IoSource, signals: tuple[signal.Signals, ...] = ()) -> None:
        """Serve `source`'s fds in this loop and hand it `signals`, which wake the loop through the pipe."""
        self._io, self._io_signals = source, frozenset(int(sig) for sig in signals)
        self._say = source.say  # the person's terminal is the relay's now: its lines go among the app's output
        for sig in signals:
            if sig not in self._old_handlers:
                self._old_handlers[sig] = signal.signal(sig, lambda *_: None)

    def _sync_io(self) -> None:
        wanted = dict(self._io.fds_to_watch()) if self._io is not None else {}
        for fd in [fd for fd in self._io_fds if fd not in wanted]:
            self._selector.unregister(fd)
            del self._io_fds[fd]
        for fd, events in wanted.items():
            if fd not in self._io_fds:
                self._selector.register(fd, events, ("io", ""))
            elif self._io_fds[fd] != events:
                self._selector.modify(fd, events, ("io", ""))
            self._io_fds[fd] = events

    def watch(self, spawned: Spawned) -> None:
        self._processes[spawned.role] = spawned
        self._selector.register(spawned.pidfd, selectors.EVENT_READ, ("exit", spawned.role))
        if spawned.status is not None:
            self._selector.register(spawned.status, selectors.EVENT_READ, ("status", spawned.role))
        if spawned.diagnostics is not None:
            self._diagnostics[spawned.role] = (spawned.diagnostics, DoorDiagnostics(spawned.role, time.monotonic()))
            self._selector.register(spawned.diagnostics, selectors.EVENT_READ, ("diagnostics", spawned.role))

    def wait_ready(self, roles: tuple[str, ...], timeout_s: float) -> Ending | None:
        """Until every door in `roles` said ready; an Ending if one died, a signal came, or time ran out."""
        deadline = time.monotonic() + timeout_s
        while not set(roles) <= self._ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = ", ".join(sorted(set(roles) - self._ready))
                return Ending(f"door(s) {missing} did not report ready within {timeout_s:.0f} s", EXIT_FAIL_CLOSED,
                              missing)
            ending = self._step(remaining)
            if ending is not None:
                return ending
        return None

    def run_until_end(self, app_role: str, deadline: float) -> Ending:
        """Until the app exits, a door exits (fail closed), a signal arrives, or the TTL passes."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return Ending("the session TTL (session.ttl_s) ran out", EXIT_TTL)
            ending = self._step(remaining, app_role)
            if ending is not None:
                return ending

    def _step(self, timeout: float, app_role: str | None = None) -> Ending | None:
        self._sync_io()
        try:
            ending = self._serve_ready(self._selector.select(timeout), app_role)
        finally:
            after_round = self._on_round_end()
        return ending if ending is not None else after_round

    def _serve_ready(self, ready: list[tuple[selectors.SelectorKey, int]], app_role: str | None) -> Ending | None:
        for key, events in ready:
            kind, role = key.data
            if kind == "signal":
                ending = self._signal_ending()
                if ending is not None:
                    return ending
            elif kind == "status":
                self._read_statuses(role, STATUS_PER_ROUND)
            elif kind == "diagnostics":
                self._read_diagnostics(role)
            elif kind == "exit":
                return self._exit_ending(role, app_role)
            elif kind == "io" and self._io is not None:
                self._io.on_ready(key.fd, events)
        return None

    def _signal_ending(self) -> Ending | None:
        try:
            data = os.read(self._signal_r, 64)
        except BlockingIOError:
            return None
        for signum in data:
            if signum in [int(s) for s in END_SIGNALS]:
                name = signal.Signals(signum).name
                return Ending(f"the launcher received {name}", EXIT_SIGNAL_BASE + signum)
            if signum in self._io_signals and self._io is not None:
                self._io.on_signal(signum)
        return None

    def _exit_ending(self, role: str, app_role: str | None) -> Ending:
        status = self.reap(role)
        if role == app_role:
            return Ending(describe_exit(role, status), exit_code_of(status), app_status=status)
        return Ending(f"door {describe_exit(role, status)}; the session ends (fail closed)", EXIT_FAIL_CLOSED, role)

    def _read_statuses(self, role: str, at_most: int | None) -> bool:
        """What the door sent, `at_most` messages (None: all); at its end, unregister it and return False."""
        sock = self._processes[role].status
        assert sock is not None
        count = 0
        while at_most is None or count < at_most:
            try:
                message = sock.recv(MAX_STATUS_BYTES, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                message = b""
            if not message:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
                return False
            self._handle_status(role, message)
            count += 1
        return True

    def _read_diagnostics(self, role: str) -> None:
        """One read of the door's stderr: its whole lines shown, bounded (launcher/policy/door_diagnostics.py)."""
        fd, lines = self._diagnostics[role]
        try:
            data = os.read(fd, DIAGNOSTICS_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        now = time.monotonic()
        if data:
            shown = lines.feed(data, now)
        else:
            shown = lines.end(now)
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(fd)
        for line in shown:
            self._say(line)

    def _handle_status(self, role: str, message: bytes) -> None:
        decoded = decode_status(message)
        if decoded is None:
            self._on_audit("door.status.malformed", {"role": role, "bytes": len(message)})
            return
        lost = decoded.get(DROPPED_BEFORE)
        if isinstance(lost, int) and not isinstance(lost, bool) and lost > 0:
            # What the door could not queue or send: said in the log where it happened, never silent.
            self._on_audit(LOST_EVENT, {"role": role, "count": lost})
        self._dispatch_status(role, decoded)

    def _dispatch_status(self, role: str, decoded: dict[str, object]) -> None:
        kind = decoded.get("type")
        event = decoded.get("event")
        if kind == READY:
            self._ready.add(role)
            self._on_audit("door.ready", {"role": role, "pid": self._processes[role].pid})
        elif kind == AUDIT and isinstance(event, dict):
            # The door's fields first: it may not overwrite which role the launcher says sent them.
            self._on_audit("door.event", {**event, "role": role})
        elif kind == LOST:
            pass  # it carried only `dropped_before`
        elif kind == FORBID:
            self._forbid(role, decoded)
        elif kind == FINGERPRINT:
            self._fingerprint(role, decoded.get("fingerprint"))
        elif kind == FATAL:
            self._on_audit("door.fatal", {"role": role, "detail": str(decoded.get("detail", ""))[:500]})
        else:
            self._on_audit("door.status.unknown", {"role": role, "type": str(kind)[:40]})

    def _forbid(self, role: str, decoded: dict[str, object]) -> None:
        """A kept secret the keys door tells the log to redact from now on (its value never logged)."""
        value, name = decoded.get("value"), str(decoded.get("name", ""))[:100]
        if role not in KEPT_SECRET_ROLES or not isinstance(value, str):
            why = "only the keys door keeps secrets" if role not in KEPT_SECRET_ROLES else "the value is not a string"
            self._on_audit("door.status.refused", {"role": role, "type": FORBID, "name": name, "why": why})
            return
        # The log registers the value first, so its own line shows only the fingerprint.
        self._on_audit(FORBID_EVENT, {"role": role, "name": name, "value": value})

    def _fingerprint(self, role: str, part: object) -> None:
        """One part of the keys door's fingerprint, kept for `kept_fingerprint` (the log shows only names)."""
        if role not in KEPT_SECRET_ROLES or not isinstance(part, dict):
            why = "only the keys door keeps secrets" if role not in KEPT_SECRET_ROLES else "the part is not an object"
            self._on_audit("door.status.refused", {"role": role, "type": FINGERPRINT, "why": why})
            return
        self._fingerprint_parts.append(part)
        secrets = part.get("secrets")
        names = [str(item.get("name", ""))[:100] for item in secrets if isinstance(item, dict)] \
            if isinstance(secrets, list) else []
        self._on_audit(FINGERPRINT_EVENT, {"role": role, "names": names, "unmatched": part.get("unmatched", [])})

    def kept_fingerprint(self) -> SecretFingerprint | None:
        """The fingerprint the keys door sent before ready (None: it sent none); ValueError when its parts do not
        make one."""
        return SecretFingerprint.from_parts(self._fingerprint_parts) if self._fingerprint_parts else None

    def drain_statuses(self) -> None:
        """Read what doors sent and wrote before they were stopped: their last audit events and diagnostics, then
        one audit event per door that wrote diagnostics, with their counts."""
        for role, spawned in self._processes.items():
            if spawned.status is not None:
                self._read_statuses(role, None)
        for role, (fd, lines) in self._diagnostics.items():
            with contextlib.suppress(OSError):
                while data := os.read(fd, DIAGNOSTICS_READ):
                    for line in lines.feed(data, time.monotonic()):
                        self._say(line)
            for line in lines.end(time.monotonic()):
                self._say(line)
            seen = lines.statistics()
            if seen.lines:
                self._on_audit("door.diagnostics", {"role": role, "lines": seen.lines, "shown": seen.shown,
                                                    "held_back": seen.held_back, "bytes": seen.bytes})
        self._on_round_end()

    def reap(self, role: str) -> int:
        """Collect a process's wait status once; later calls return the recorded status."""
        if role in self._statuses:
            return self._statuses[role]
        spawned = self._processes[role]
        _, status = os.waitpid(spawned.pid, 0)
        if spawned.exit_report is not None:  # the app's pid namespace init: the app's status, as it reported it
            status = reported_status(spawned.exit_report, status)
        self._statuses[role] = status
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(spawned.pidfd)
        os.close(spawned.pidfd)
        return status

    def stop(self, role: str, grace_s: float, unstick: Callable[[], None] | None = None) -> int:
        """SIGTERM, then SIGKILL after `grace_s`; returns the wait status. Meanwhile the role's status messages
        are read, so a door sending what it had queued is not blocked until the SIGKILL. A process still there
        KILLED_EXIT_S after its SIGKILL is in a wait no signal ends (a FUSE request its door has read and not
        answered): `unstick` is then called, once, before the wait for its end."""
        if role in self._statuses:
            return self._statuses[role]
        spawned = self._processes[role]
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(spawned.pidfd, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        with selectors.DefaultSelector() as waiting:
            waiting.register(spawned.pidfd, selectors.EVENT_READ, "exit")
            status = spawned.status
            if status is not None:
                waiting.register(status, selectors.EVENT_READ, "status")
            while not self._exited_or_killed(spawned, waiting, deadline):
                if status is not None and not self._read_statuses(role, STATUS_PER_ROUND):
                    waiting.unregister(status)  # its end was read
                self._on_round_end()
        if unstick is not None and not _exits_within(spawned.pidfd, KILLED_EXIT_S):
            unstick()
        return self.reap(role)

    def _exited_or_killed(self, spawned: Spawned, waiting: selectors.BaseSelector, deadline: float) -> bool:
        """True once `spawned` exited, or was sent SIGKILL at the deadline; False when a status message waits."""
        remaining = deadline - time.monotonic()
        ready = waiting.select(remaining) if remaining > 0 else []
        if any(key.data == "exit" for key, _ in ready):
            return True
        if not ready:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(spawned.pidfd, signal.SIGKILL)
            return True
        return False

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self._processes)

    def pid_of(self, role: str) -> int:
        return self._processes[role].pid


def _exits_within(pidfd: int, seconds: float) -> bool:
    """True once the process behind `pidfd` has exited, waiting at most `seconds`."""
    with selectors.DefaultSelector() as waiting:
        waiting.register(pidfd, selectors.EVENT_READ)
        return bool(waiting.select(seconds))
