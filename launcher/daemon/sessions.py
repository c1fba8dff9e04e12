"""The daemon's table of the sessions it runs: one per accepted run request, from its runner's fork to its exit.
Who sees and stops what is decided here (a caller its own, root all), and how `ps` shows them."""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from launcher.daemon.deputy import Caller
from launcher.daemon.protocol import FrameReader


@dataclass(eq=False)
class Running:
    """One session: its caller's connection and pidfd, its runner, and the sid once the runner journaled it."""

    conn: socket.socket
    caller: Caller
    client_pidfd: int | None
    runner_pid: int
    runner_pidfd: int
    report_fd: int  # read end: the runner writes the sid once the session's journal exists
    manifest_sha256: str
    name: str
    started: float = field(default_factory=time.time)
    sid: str | None = None
    stop_asked: bool = False
    reader: FrameReader = field(default_factory=FrameReader)
    _reported: bytes = b""

    def read_report(self) -> str | None:
        """The sid, once the runner's line is whole; None before (or when the runner closed without one)."""
        with contextlib.suppress(BlockingIOError, InterruptedError):
            self._reported += os.read(self.report_fd, 64)
        line, newline, _ = self._reported.partition(b"\n")
        return line.decode(errors="replace") if newline else None


def may_see(viewer: Caller, session: Running) -> bool:
    """A caller sees (and stops, and reads the logs of) its own sessions; root sees all."""
    return viewer.uid == 0 or viewer.uid == session.caller.uid


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def shown(session: Running) -> dict[str, object]:
    """One session as `ps` shows it."""
    return {"sid": session.sid, "uid": session.caller.uid, "user": user_name(session.caller.uid),
            "pid": session.runner_pid, "caller_pid": session.caller.pid, "name": session.name,
            "manifest": session.manifest_sha256, "started": int(session.started),
            "state": "stopping" if session.stop_asked else ("running" if session.sid else "starting")}


class SessionTable:
    """The running sessions in start order (the order SIGTERM ends them in)."""

    def __init__(self) -> None:
        self._sessions: list[Running] = []

    def add(self, session: Running) -> None:
        self._sessions.append(session)

    def remove(self, session: Running) -> None:
        self._sessions.remove(session)

    def __iter__(self) -> Iterator[Running]:
        return iter(list(self._sessions))

    def __len__(self) -> int:
        return len(self._sessions)

    def of_uid(self, uid: int) -> int:
        return sum(1 for session in self._sessions if session.caller.uid == uid)

    def visible_to(self, viewer: Caller) -> list[Running]:
        return [session for session in self._sessions if may_see(viewer, session)]

    def by_sid(self, viewer: Caller, sid: str) -> Running | None:
        """The session `sid` when `viewer` may see it; None otherwise (another's looks like none at all)."""
        return next((s for s in self._sessions if s.sid == sid and may_see(viewer, s)), None)
