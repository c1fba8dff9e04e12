"""Refusals a local user makes in a loop: each is still refused and counted, but only a bounded number are
written whole (launcher/daemon/refusal_rate.py), so a loop cannot fill the daemon's disk."""

from __future__ import annotations

import os
import socket

import pytest
from _launchd import DAEMON_UID, NOBODY, Daemon, Scratch, policy_document

from launcher.daemon.protocol import FrameReader
from launcher.daemon.refusal_rate import BURST, MAX_KINDS, OTHER, RefusalRate
from launcher.daemon.wire import read_frame


def test_a_burst_is_written_whole_then_counted() -> None:
    rate = RefusalRate(burst=3, refill_s=10, summary_s=60)
    assert [rate.admit(7, "run", "/x", 0.0) for _ in range(5)] == [True, True, True, False, False]
    assert rate.next_due() == 60.0
    assert rate.due(59.9) == []
    (counted,) = rate.due(60.0)
    assert (counted.uid, counted.count, counted.first, counted.last) == (7, 2, 0.0, 0.0)
    assert counted.kinds == (("run /x", 2),)
    assert rate.due(61.0) == [] and rate.next_due() is None


def test_the_bucket_refills_one_per_period_and_never_beyond_the_burst() -> None:
    rate = RefusalRate(burst=2, refill_s=10, summary_s=60)
    assert rate.admit(1, "run", None, 0.0) and rate.admit(1, "run", None, 0.0)
    assert not rate.admit(1, "run", None, 5.0)  # half a token
    assert rate.admit(1, "run", None, 10.0)  # a whole one again
    assert not rate.admit(1, "run", None, 10.0)
    assert rate.admit(1, "run", None, 1000.0) and rate.admit(1, "run", None, 1000.0)
    assert not rate.admit(1, "run", None, 1000.0)


def test_each_uid_has_its_own_bucket() -> None:
    rate = RefusalRate(burst=1, refill_s=10, summary_s=60)
    assert rate.admit(1, "unknown", None, 0.0) and not rate.admit(1, "unknown", None, 0.0)
    assert rate.admit(2, "unknown", None, 0.0)


def test_kinds_are_bounded_and_the_rest_is_other() -> None:
    rate = RefusalRate(burst=0, refill_s=10, summary_s=60)
    for n in range(MAX_KINDS + 5):
        assert not rate.admit(3, "run", f"/row/{n}", float(n))
    (counted,) = rate.due(0.0, every=True)
    assert counted.count == MAX_KINDS + 5 and len(counted.kinds) == MAX_KINDS + 1
    assert dict(counted.kinds)[OTHER] == 5 and (counted.first, counted.last) == (0.0, float(MAX_KINDS + 4))


def test_a_full_idle_bucket_is_forgotten() -> None:
    rate = RefusalRate(burst=2, refill_s=10, summary_s=60)
    rate.admit(9, "run", None, 0.0)
    rate.due(5.0)
    assert 9 in rate._buckets
    rate.due(10.0)
    assert 9 not in rate._buckets


def _garbage_as(uid: int, path: str) -> str:
    """Connect as `uid`, send a malformed frame, return the refusal's type."""
    pid_r, pid_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(pid_r)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(path)
            conn.sendall(b"\x00\x00\x00\x05hello")
            conn.settimeout(30)
            frame = read_frame(conn, FrameReader())
            os.write(pid_w, str((frame or {}).get("type")).encode())
        finally:
            os._exit(0)
    os.close(pid_w)
    with os.fdopen(pid_r, "rb") as reader:
        answer = reader.read().decode()
    os.waitpid(pid, 0)
    return answer


@pytest.mark.root
@pytest.mark.slow
def test_a_local_user_in_a_loop_is_refused_every_time_and_written_whole_only_a_burst(scratch: Scratch) -> None:
    daemon = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 1})).start()
    flood = BURST + 8
    try:
        answers = [_garbage_as(NOBODY, str(daemon.socket)) for _ in range(flood)]
        other = _garbage_as(DAEMON_UID, str(daemon.socket))
    finally:
        daemon.stop()
    assert answers == ["refused"] * flood and other == "refused"
    whole = [event for event in daemon.requests("refused") if event["uid"] == NOBODY]
    assert len(whole) == BURST
    (counted,) = [event for event in daemon.audit_events() if event["event"] == "launchd.refusals_counted"]
    assert counted["uid"] == NOBODY and counted["count"] == flood - BURST and counted["kinds"] == {"unknown": 8}
    assert len([event for event in daemon.requests("refused") if event["uid"] != NOBODY]) == 1
