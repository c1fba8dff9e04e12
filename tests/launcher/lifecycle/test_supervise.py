"""The supervisor: door status messages, fail-closed exits, and the TTL, with real child processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

from launcher.lifecycle.spawn import Spawned
from launcher.lifecycle.supervise import Supervisor


def _child(status: socket.socket | None, messages: list[bytes], then_sleep: float, code: int = 0) -> Spawned:
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)  # as launcher/lifecycle/spawn.py does for real components
        for message in messages:
            assert status is not None
            status.send(message)
        time.sleep(then_sleep)
        os._exit(code)
    return Spawned(role="", pid=pid, pidfd=os.pidfd_open(pid), status=status)


def _door(role: str, messages: list[bytes], then_sleep: float, code: int = 0) -> Spawned:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    spawned = _child(theirs, messages, then_sleep, code)
    theirs.close()
    return Spawned(role=role, pid=spawned.pid, pidfd=spawned.pidfd, status=ours)


def test_ready_audit_and_a_forged_role_is_overwritten() -> None:
    events: list[tuple[str, dict[str, object]]] = []
    supervisor = Supervisor(lambda event, fields: events.append((event, dict(fields))))
    try:
        ready = json.dumps({"type": "ready"}).encode()
        forged = json.dumps({"type": "audit", "event": {"role": "keys", "op": "write"}}).encode()
        supervisor.watch(_door("fs", [ready, forged, b"not json"], 5))
        assert supervisor.wait_ready(("fs",), 10) is None
        deadline = time.monotonic() + 5
        while len(events) < 3 and time.monotonic() < deadline:
            supervisor._step(0.1)
        assert ("door.ready", {"role": "fs", "pid": supervisor.pid_of("fs")}) in events
        assert ("door.event", {"role": "fs", "op": "write"}) in events  # the door cannot claim to be keys
        assert any(event == "door.status.malformed" for event, _ in events)
        supervisor.stop("fs", 1)
    finally:
        supervisor.close()


def test_a_door_that_exits_ends_the_session_fail_closed() -> None:
    supervisor = Supervisor(lambda event, fields: None)
    try:
        supervisor.watch(_door("net", [], 0, code=3))
        app = _child(None, [], 30)
        supervisor.watch(Spawned("app", app.pid, app.pidfd, None))
        ending = supervisor.run_until_end("app", time.monotonic() + 20)
        assert ending.exit_code == 70 and ending.failed_role == "net"
        assert "door net exited with code 3" in ending.reason and "fail closed" in ending.reason
        assert os.WIFSIGNALED(supervisor.stop("app", 1))
    finally:
        supervisor.close()


def test_the_ttl_ends_the_session_with_124() -> None:
    supervisor = Supervisor(lambda event, fields: None)
    try:
        app = _child(None, [], 30)
        supervisor.watch(Spawned("app", app.pid, app.pidfd, None))
        ending = supervisor.run_until_end("app", time.monotonic() + 0.2)
        assert ending.exit_code == 124 and "ttl_s" in ending.reason
        status = supervisor.stop("app", 1)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    finally:
        supervisor.close()


def test_sighup_ends_the_session() -> None:
    supervisor = Supervisor(lambda event, fields: None)
    try:
        app = _child(None, [], 30)
        supervisor.watch(Spawned("app", app.pid, app.pidfd, None))
        os.kill(os.getpid(), signal.SIGHUP)
        ending = supervisor.run_until_end("app", time.monotonic() + 10)
        assert ending.exit_code == 128 + signal.SIGHUP and "SIGHUP" in ending.reason
        supervisor.stop("app", 1)
    finally:
        supervisor.close()


def test_a_status_nested_past_the_parser_is_audited_malformed_and_the_loop_goes_on() -> None:
    events: list[tuple[str, dict[str, object]]] = []
    supervisor = Supervisor(lambda event, fields: events.append((event, dict(fields))))
    try:
        ready = json.dumps({"type": "ready"}).encode()
        supervisor.watch(_door("fs", [b"[" * 60000, ready], 5))
        assert supervisor.wait_ready(("fs",), 10) is None
        assert ("door.status.malformed", {"role": "fs", "bytes": 60000}) in events
        supervisor.stop("fs", 1)
    finally:
        supervisor.close()
