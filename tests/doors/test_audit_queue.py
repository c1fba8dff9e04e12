"""The door's audit queue and its pump: bounded, acts before reports, and every loss counted to the launcher."""

from __future__ import annotations

import json
import socket

import pytest
import trio

from doors._audit_queue import AuditBackpressure, AuditQueue, AuditQueueStatistics
from doors._door import _pump, send_at_once
from doors._status import StatusSender
from pki.vocabulary import MAX_STATUS_BYTES


def _event(number: int) -> dict[str, object]:
    return {"kind": "test", "n": number}


async def test_acts_fill_only_their_share_and_reports_the_rest() -> None:
    queue = AuditQueue(8, act_share=0.5)
    assert [queue.put_act(_event(n)) for n in range(5)] == [True] * 4 + [False]
    assert [queue.put_report(_event(n)) for n in range(5)] == [True] * 4 + [False]
    # The refused act is not done, so not lost; the report that found no room is.
    assert queue.statistics() == AuditQueueStatistics(queued=8, capacity=8, lost=1)
    assert queue.take_lost() == 1 and queue.take_lost() == 0
    assert [(await queue.get() or {}).get("n") for _ in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]  # in order
    assert queue.put_act(_event(9))  # room again


async def test_close_drains_what_is_queued_then_ends_and_counts_later_puts() -> None:
    queue = AuditQueue(4)
    queue.put_report(_event(1))
    queue.close()
    assert await queue.get() == _event(1)
    assert await queue.get() is None
    assert not queue.put_report(_event(2)) and queue.take_lost() == 1


async def test_get_waits_for_an_event() -> None:
    queue = AuditQueue(4)
    got: list[object] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _append(got, queue))
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        queue.put_report(_event(7))
    assert got == [_event(7)]


async def _append(got: list[object], queue: AuditQueue) -> None:
    got.append(await queue.get())


def test_backpressure_is_the_503_refusal_of_the_door() -> None:
    refusal = AuditBackpressure("fs").refusal
    assert (refusal.status, refusal.row, refusal.who) == (503, "audit_backpressure", "fs")
    assert "did nothing" in refusal.detail and "retry" in refusal.hint


def _messages(sock: socket.socket) -> list[dict[str, object]]:
    out = []
    sock.setblocking(False)
    while True:
        try:
            out.append(json.loads(sock.recv(MAX_STATUS_BYTES)))
        except BlockingIOError:
            return out


@pytest.mark.parametrize("with_events_after", [True, False])
async def test_the_pump_tells_the_launcher_what_was_lost(with_events_after: bool) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = StatusSender(theirs.detach())
    queue = AuditQueue(4, act_share=1.0)
    for number in range(6):  # two never fit
        queue.put_report(_event(number))
    if with_events_after:
        queue.close()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, status, queue)
        await trio.testing.wait_all_tasks_blocked()
        queue.close()
    messages = _messages(ours)
    events = [m["event"] for m in messages if m["type"] == "audit"]
    assert events == [_event(n) for n in range(4)]
    assert sum(int(str(m.get("dropped_before", 0))) for m in messages) == 2  # told once, never silent
    status.close()
    ours.close()


async def test_the_pump_sends_a_lost_message_when_no_event_is_there_to_carry_the_count() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = StatusSender(theirs.detach())
    queue = AuditQueue(2)
    queue.put_report(_event(0))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, status, queue)
        await trio.testing.wait_all_tasks_blocked()  # event 0 sent; the pump waits for more
        queue.close()
        queue.put_report(_event(1))  # a handler that finished after the door stopped serving
    assert _messages(ours) == [{"type": "audit", "event": _event(0)}, {"type": "lost", "dropped_before": 1}]
    status.close()
    ours.close()


async def test_a_kept_secret_is_sent_for_the_log_to_redact() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = StatusSender(theirs.detach())
    assert await status.forbid("db", "correct-horse-battery")
    assert _messages(ours) == [{"type": "forbid", "name": "db", "value": "correct-horse-battery"}]
    status.close()
    ours.close()


async def test_an_event_meeting_an_empty_queue_is_sent_before_the_put_returns() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = StatusSender(theirs.detach())
    queue = AuditQueue(4)
    queue.send_at_once = send_at_once(status, queue)
    assert queue.put_act(_event(1)) and queue.put_report(_event(2))
    # No pump ran: the handler's own put sent them, in order, and nothing waits in the queue.
    assert _messages(ours) == [{"type": "audit", "event": _event(1)}, {"type": "audit", "event": _event(2)}]
    assert queue.statistics().queued == 0
    status.close()
    ours.close()


async def test_events_wait_behind_what_is_queued_or_in_the_pumps_hands() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    status = StatusSender(theirs.detach())
    queue = AuditQueue(64)
    queue.send_at_once = send_at_once(status, queue)
    big = {"kind": "test", "pad": "x" * 1500}
    sent = 0
    while queue.put_act({**big, "n": sent}) and not queue.statistics().queued:
        sent += 1  # until the launcher's socket is full: the event that found no room is queued
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, status, queue)
        await trio.testing.wait_all_tasks_blocked()  # the pump holds that event, waiting for room
        assert queue.statistics().queued == 0
        queue.put_act({**big, "n": sent + 1})  # behind the pump's, though the queue is empty
        queue.put_report(_event(-1))
        got: list[object] = []
        while len(got) < sent + 3:
            await trio.sleep(0.01)
            got += [m["event"].get("n") for m in _messages(ours)]  # type: ignore[union-attr]
        queue.close()
    assert got == [*range(sent + 2), -1]
    status.close()
    ours.close()


async def test_nothing_is_sent_at_once_while_the_pump_holds_an_event() -> None:
    queue = AuditQueue(4)
    sent: list[object] = []
    queue.put_report(_event(1))  # no sender yet: queued
    queue.send_at_once = lambda event: sent.append(event) is None
    assert await queue.get() == _event(1)  # the pump took it and is sending it
    queue.put_report(_event(2))  # behind it
    assert sent == [] and await queue.get() == _event(2)
    queue.put_report(_event(3))  # the pump holds event 2 (it may still send a count after it)
    assert sent == [] and queue.statistics().queued == 1
    assert await queue.get() == _event(3)
    with trio.move_on_after(0.01):
        await queue.get()  # back, and waiting: the queue is empty and nothing in flight
    queue.put_report(_event(4))
    assert sent == [_event(4)] and queue.statistics().queued == 0


def test_a_gone_launcher_counts_the_event_and_the_act_goes_on() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = StatusSender(theirs.detach())
    ours.close()
    queue = AuditQueue(4)
    queue.send_at_once = send_at_once(status, queue)
    assert queue.put_act(_event(1))  # as the pump would: sent nowhere, counted as dropped
    assert status.statistics().dropped == 1 and queue.statistics().queued == 0
    status.close()
