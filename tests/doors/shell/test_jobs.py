"""doors/shell/_jobs.py: what started commands keep for poll is bounded by the door, whatever they print.

Before, a started command kept every frame until 64 more had finished; eight never polled, each printing 64 MiB
a stream, and the shell door was OOM-killed (tests/attacks/test_shell_unpolled.py runs that for real).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import trio
import trio.testing

from doors._refusal import DoorRefused
from doors.shell._job_request import Poll
from doors.shell._jobs import FINISHED_KEPT_BYTES, JOB_FRAME_BUFFER, JOB_KEPT_BYTES, Job, JobTable

PIECE = 1 << 20


def _frame(seq: int) -> bytes:
    return json.dumps({"seq": seq, "stream": "stdout", "text": "y" * PIECE}).encode() + b"\n"


def _job(command_id: str = "c1") -> Job:
    running: Any = SimpleNamespace(command_id=command_id)
    return Job(running)


def _kept(job: Job) -> int:
    return sum(len(frame.get("text", "")) for frame in job.frames)


async def test_an_unpolled_command_stops_being_collected_past_its_share_and_a_poll_lets_it_go_on() -> None:
    job = _job()
    send, receive = trio.open_memory_channel[bytes](JOB_FRAME_BUFFER)
    frames = 4 * JOB_KEPT_BYTES // PIECE
    sent = 0

    async def command() -> None:
        nonlocal sent
        async with send:
            for seq in range(1, frames + 1):
                await send.send(_frame(seq))
                sent = seq

    async with trio.open_nursery() as nursery:
        nursery.start_soon(job.collect, receive)
        nursery.start_soon(command)
        await trio.testing.wait_all_tasks_blocked()
        assert _kept(job) <= JOB_KEPT_BYTES + PIECE  # what no poll took: its share, and one frame
        assert sent < frames  # the command waits (its pipes would not be read)
        taken = 0
        for _ in range(frames + 2):  # each poll takes a frame or more; a poll that let nothing go would stall
            if job.done:
                break
            answer = await job.poll(Poll("c1", taken, 0))
            taken = answer["frames"][-1]["seq"] if answer["frames"] else taken
            await trio.testing.wait_all_tasks_blocked()
            assert _kept(job) <= JOB_KEPT_BYTES + PIECE
        assert job.done, f"the command stalled after {sent} of {frames} frames"  # (in the nursery: it is cancelled)
    assert taken == frames == sent  # everything reached the client, a share at a time


def test_finished_commands_are_kept_within_a_byte_bound_the_newest_always() -> None:
    table = JobTable()
    big = FINISHED_KEPT_BYTES // 2 + 1
    for index in range(1, 5):
        job = _job(f"c{index}")
        job.done, job.kept_bytes = True, big
        table.add(job)
    kept = [key for key in ("c1", "c2", "c3", "c4") if _held(table, key)]
    assert kept == ["c4"]  # two would pass FINISHED_KEPT_BYTES: only the newest stays
    huge = _job("c5")
    huge.done, huge.kept_bytes = True, 2 * FINISHED_KEPT_BYTES
    table.add(huge)
    assert [key for key in ("c4", "c5") if _held(table, key)] == ["c5"]


def _held(table: JobTable, command_id: str) -> bool:
    try:
        table.get(command_id)
    except DoorRefused:
        return False
    return True
