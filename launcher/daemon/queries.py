"""`ps`, `stop SID` and `logs SID` through the daemon: a caller sees, stops and reads only its own sessions
(root all); another's session is answered exactly as one that does not exist. Every query is audited."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from launcher.daemon.deputy import Caller
from launcher.daemon.protocol import MAX_FRAME_BYTES, LogsRequest, PsRequest, Request, StopRequest
from launcher.daemon.sessions import shown
from launcher.daemon.wire import send_bounded
from launcher.lifecycle.audit_verify import LOG_NAME
from pki.vocabulary import AUDIT_ROOT, EXIT_FAILED

if TYPE_CHECKING:
    from launcher.daemon.server import Daemon

MAX_LOG_BYTES = 16 * 1024 * 1024
_LOG_FRAME_BYTES = MAX_FRAME_BYTES // 2


def answer_query(daemon: Daemon, conn: socket.socket, caller: Caller, request: Request) -> None:
    if isinstance(request, PsRequest):
        visible = [shown(session) for session in daemon.sessions.visible_to(caller)]
        daemon.records.event("launchd.request", {"op": "ps", "verdict": "allowed", "uid": caller.uid,
                                                 "caller_pid": caller.pid, "shown": len(visible)})
        send_bounded(conn, {"type": "sessions", "sessions": visible})
    elif isinstance(request, StopRequest):
        _stop(daemon, conn, caller, request.sid)
    elif isinstance(request, LogsRequest):
        _logs(daemon, conn, caller, request.sid)


def _none_of_yours(daemon: Daemon, conn: socket.socket, caller: Caller, op: str, sid: str) -> None:
    daemon.records.event("launchd.request", {"op": op, "verdict": "refused", "uid": caller.uid,
                                             "caller_pid": caller.pid, "sid": sid, "reason": "no such session"})
    send_bounded(conn, {"type": "refused", "reason": f"no session {sid} of yours", "hint": "see `sharness-launch ps`",
                        "row": None, "policy_row": None, "exit_code": EXIT_FAILED,
                        "words": f"sharness-launchd refused: no session {sid} of yours"})


def _stop(daemon: Daemon, conn: socket.socket, caller: Caller, sid: str) -> None:
    session = daemon.sessions.by_sid(caller, sid)
    if session is None:
        _none_of_yours(daemon, conn, caller, "stop", sid)
        return
    daemon.records.event("launchd.request", {"op": "stop", "verdict": "allowed", "uid": caller.uid,
                                             "caller_pid": caller.pid, "sid": sid})
    daemon.end_session(session, f"stopped by uid {caller.uid}")
    send_bounded(conn, {"type": "stopped", "sid": sid})


def _logs(daemon: Daemon, conn: socket.socket, caller: Caller, sid: str) -> None:
    owner = daemon.records.owner_of(sid)
    if owner is None or (caller.uid != 0 and caller.uid != owner):
        _none_of_yours(daemon, conn, caller, "logs", sid)
        return
    path = os.path.join(AUDIT_ROOT, sid, LOG_NAME)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        daemon.records.event("launchd.request", {"op": "logs", "verdict": "allowed", "uid": caller.uid, "sid": sid,
                                                 "lines": 0})
        send_bounded(conn, {"type": "log", "lines": [], "more": False,
                            "note": "the session has no audit log yet (it is opened when the app starts)"})
        return
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_LOG_BYTES)
    lines = raw.decode("utf-8", errors="replace").splitlines()
    daemon.records.event("launchd.request", {"op": "logs", "verdict": "allowed", "uid": caller.uid, "sid": sid,
                                             "lines": len(lines)})
    _send_lines(conn, lines)


def _send_lines(conn: socket.socket, lines: list[str]) -> None:
    batch: list[str] = []
    size = 0
    for line in lines:
        if batch and size + len(line) > _LOG_FRAME_BYTES:
            if not send_bounded(conn, {"type": "log", "lines": batch, "more": True}):
                return
            batch, size = [], 0
        batch.append(line[:_LOG_FRAME_BYTES])
        size += len(line) + 8
    send_bounded(conn, {"type": "log", "lines": batch, "more": False})

