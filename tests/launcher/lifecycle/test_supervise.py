"""The supervisor: door status messages, fail-closed exits, and the TTL, with real child processes."""

from __future__ import annotations

import json
import os
import select
import selectors
import signal
import socket
import time
from pathlib import Path

from doors import fingerprint_of
from launcher.lifecycle.audit import AuditLog
from launcher.lifecycle.spawn import Spawned
from launcher.lifecycle.supervise import STATUS_PER_ROUND, Supervisor


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


class AlwaysReady:
    """A relay whose fd is always readable and never drained, as a flood of the app's output would be."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        os.write(self.write_end, b"x")
        self.rounds = 0
        self.said: list[str] = []

    def fds_to_watch(self) -> dict[int, int]:
        return {self.read_end: selectors.EVENT_READ}

    def on_ready(self, fd: int, events: int) -> None:
        self.rounds += 1

    def on_signal(self, signum: int) -> None:
        pass

    def say(self, line: str) -> None:
        self.said.append(line)

    def close(self) -> None:
        os.close(self.read_end)
        os.close(self.write_end)


def test_each_round_reads_a_doors_pending_status_messages_beside_a_busy_relay() -> None:
    """One round serves the relay once and up to STATUS_PER_ROUND messages of a door: a relay that is always
    ready cannot starve the doors' audit (with one message a round, 270 would take 270 rounds)."""
    events: list[str] = []
    supervisor = Supervisor(lambda event, fields: events.append(event))
    relay = AlwaysReady()
    sent_r, sent_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    audit = json.dumps({"type": "audit", "event": {"op": "stat"}}).encode()
    pending = 270  # more than one round takes, fewer than the socket holds (278 of these)
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for _ in range(pending):
            theirs.send(audit)
        os.write(sent_w, b"s")
        time.sleep(30)
        os._exit(0)
    theirs.close()
    try:
        supervisor.add_io(relay)
        supervisor.watch(Spawned(role="fs", pid=pid, pidfd=os.pidfd_open(pid), status=ours))
        assert select.select([sent_r], [], [], 30)[0] and os.read(sent_r, 1) == b"s"  # all are waiting now
        supervisor._step(1)
        assert events.count("door.event") == STATUS_PER_ROUND and relay.rounds == 1
        supervisor._step(1)
        assert events.count("door.event") == pending and relay.rounds == 2
        supervisor.stop("fs", 1)
    finally:
        supervisor.close()
        relay.close()
        os.close(sent_r)
        os.close(sent_w)


def _door_writing(role: str, stderr: bytes) -> Spawned:
    """A door process whose stderr is a pipe the supervisor reads, as spawn_door makes it."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.write(write_end, stderr)
        os._exit(0)
    os.close(write_end)
    os.set_blocking(read_end, False)
    return Spawned(role=role, pid=pid, pidfd=os.pidfd_open(pid), status=None, diagnostics=read_end)


def test_a_doors_stderr_is_shown_as_inert_lines_with_its_role_and_counted_in_the_audit() -> None:
    events: list[tuple[str, dict[str, object]]] = []
    said: list[str] = []
    supervisor = Supervisor(lambda event, fields: events.append((event, dict(fields))), say=said.append)
    try:
        written = b"handler for GET /v0/fs/files/\x1b[2J\x1b]0;t\x07 failed\n" + b"spam\n" * 30 + b"unfinished"
        supervisor.watch(_door_writing("fs", written))
        supervisor.reap("fs")
        supervisor.drain_statuses()
    finally:
        supervisor.close()
    assert said[0] == "sharness-launch: fs door: handler for GET /v0/fs/files/\\x1b[2J\\x1b]0;t\\x07 failed"
    assert all(line.startswith("sharness-launch: fs door: ") and "\x1b" not in line for line in said)
    assert len(said) <= 12  # a burst, a notice: the other lines are counted, not shown
    counted = [fields for event, fields in events if event == "door.diagnostics"]
    assert counted == [{"role": "fs", "lines": 32, "shown": 10, "held_back": 22, "bytes": len(written)}]


def test_a_relay_takes_over_the_launchers_lines() -> None:
    said: list[str] = []
    supervisor = Supervisor(lambda event, fields: None, say=said.append)
    relay = AlwaysReady()
    try:
        supervisor.add_io(relay)
        supervisor.watch(_door_writing("net", b"resolver failed\n"))
        supervisor.reap("net")
        supervisor.drain_statuses()
    finally:
        supervisor.close()
        relay.close()
    assert said == [] and relay.said == ["sharness-launch: net door: resolver failed"]


def _recording() -> tuple[Supervisor, list[tuple[str, dict[str, object]]], list[int]]:
    events: list[tuple[str, dict[str, object]]] = []
    rounds: list[int] = []
    supervisor = Supervisor(lambda event, fields: events.append((event, dict(fields))),
                            on_round_end=lambda: rounds.append(len(events)))
    return supervisor, events, rounds


def _audit(n: int) -> bytes:
    return json.dumps({"type": "audit", "event": {"op": "stat", "n": n}}).encode()


def test_one_round_reads_every_pending_message_then_ends_once() -> None:
    supervisor, events, rounds = _recording()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for message in (json.dumps({"type": "ready"}).encode(), *(_audit(n) for n in range(50))):
        theirs.send(message)  # all pending before the first round
    sleeper = _child(None, [], 30)
    try:
        supervisor.watch(Spawned("fs", sleeper.pid, sleeper.pidfd, ours))
        assert supervisor._step(10) is None
        assert [fields["n"] for event, fields in events if event == "door.event"] == list(range(50))
        assert rounds == [51]  # one round, one commit for the 51 lines
        supervisor.stop("fs", 1)
    finally:
        theirs.close()
        supervisor.close()


def test_what_a_door_lost_becomes_an_audit_lost_event_before_its_next_message() -> None:
    supervisor, events, _ = _recording()
    try:
        messages = [json.dumps({"type": "ready"}).encode(),
                    json.dumps({"type": "audit", "event": {"op": "write"}, "dropped_before": 7}).encode(),
                    json.dumps({"type": "lost", "dropped_before": 2}).encode(),
                    json.dumps({"type": "lost", "dropped_before": True}).encode(),  # not a count
                    json.dumps({"type": "lost", "dropped_before": -3}).encode()]
        supervisor.watch(_door("fs", messages, 30))
        assert supervisor.wait_ready(("fs",), 10) is None
        while len(events) < 4:
            supervisor._step(10)
        assert events[1:] == [("audit.lost", {"role": "fs", "count": 7}), ("door.event", {"op": "write", "role": "fs"}),
                              ("audit.lost", {"role": "fs", "count": 2})]
        supervisor.stop("fs", 1)
    finally:
        supervisor.close()


def test_only_the_keys_door_may_name_a_value_to_keep() -> None:
    supervisor, events, _ = _recording()
    try:
        forbid = json.dumps({"type": "forbid", "name": "db", "value": "correct-horse-battery"}).encode()
        supervisor.watch(_door("keys", [forbid], 30))
        supervisor.watch(_door("net", [forbid], 30))
        while len(events) < 2:
            supervisor._step(10)
        assert ("audit.forbid", {"role": "keys", "name": "db", "value": "correct-horse-battery"}) in events
        refused = [fields for event, fields in events if event == "door.status.refused"]
        assert refused == [{"role": "net", "type": "forbid", "name": "db", "why": "only the keys door keeps secrets"}]
        for role in ("keys", "net"):
            supervisor.stop(role, 1)
    finally:
        supervisor.close()


def _sends_on_sigterm(status: socket.socket, count: int) -> None:
    """In the child: on SIGTERM, send `count` messages (blocking: more than the socket holds), then exit 0."""
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    status.send(json.dumps({"type": "ready"}).encode())  # only now may the parent send SIGTERM
    while not stopping:
        signal.pause()
    status.setblocking(True)
    for n in range(count):
        status.send(_audit(n))
    os._exit(0)


def test_stop_reads_while_it_waits_so_a_door_sending_its_last_events_is_not_killed() -> None:
    supervisor, events, _ = _recording()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        ours.close()
        _sends_on_sigterm(theirs, 2000)
    theirs.close()
    try:
        supervisor.watch(Spawned("fs", pid, os.pidfd_open(pid), ours))
        assert supervisor.wait_ready(("fs",), 30) is None
        status = supervisor.stop("fs", 60)  # a bound only: the child exits once its messages are read
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        supervisor.drain_statuses()
        assert [fields["n"] for event, fields in events if event == "door.event"] == list(range(2000))
    finally:
        supervisor.close()


def test_a_value_the_keys_door_keeps_is_redacted_in_every_later_line(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), "0badc0de")
    supervisor = Supervisor(lambda event, fields: log.append({**fields, "event": event}), on_round_end=log.commit)
    secret = "sk-live-but-not-shaped-like-one-0123"
    try:
        supervisor.watch(_door("keys", [json.dumps({"type": "forbid", "name": "db", "value": secret}).encode()], 30))
        while log.lines < 2:
            supervisor._step(10)
        used = json.dumps({"type": "audit", "event": {"requested": f"h/?k={secret}"}}).encode()
        supervisor.watch(_door("net", [used], 30))
        while log.lines < 3:
            supervisor._step(10)
        for role in ("keys", "net"):
            supervisor.stop(role, 1)
    finally:
        supervisor.close()
    log.close()
    raw = Path(log.path).read_bytes()
    assert secret.encode() not in raw
    forbid, used = (json.loads(line) for line in raw.splitlines()[1:3])
    assert (forbid["event"], forbid["name"], forbid["kept"]) == ("audit.forbid", "db", True)
    assert used["requested"] == f"h/?k={forbid['value']}" and str(forbid["value"]).startswith("[redacted:kept:")


def test_only_the_keys_door_may_hand_a_fingerprint_and_the_log_shows_only_its_names() -> None:
    fingerprint = fingerprint_of({"db": b"correct-horse-battery-staple"}, {"db": ["db.example.test"]})
    parts = [json.dumps({"type": "fingerprint", "fingerprint": part}).encode() for part in fingerprint.parts()]
    supervisor, events, _ = _recording()
    try:
        supervisor.watch(_door("keys", parts, 30))
        supervisor.watch(_door("net", parts[:1], 30))
        while len(events) < 3:
            supervisor._step(10)
        assert supervisor.kept_fingerprint() == fingerprint
        assert ("keys.fingerprint", {"role": "keys", "names": ["db"], "unmatched": []}) in events
        refused = [fields for event, fields in events if event == "door.status.refused"]
        assert refused == [{"role": "net", "type": "fingerprint", "why": "only the keys door keeps secrets"}]
        for role in ("keys", "net"):
            supervisor.stop(role, 1)
    finally:
        supervisor.close()
