"""doors/shell/_command.py: a command's end is accounted for (its exit event) before its final frame is sent."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import trio
import trio.testing

from doors.shell._cgroup import CommandCgroup
from doors.shell._command import Running, _outcome, supervise
from doors.shell._output import Framer
from doors.shell._request import RunRequest


def _running(argv: list[str]) -> Running:
    """`argv` started with its stdout and stderr on pipes; no cgroup of its own (no root: nothing to kill)."""
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    pid = os.posix_spawnp(argv[0], argv, {"PATH": "/usr/bin:/bin"},
                          file_actions=[(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)])
    os.close(out_w)
    os.close(err_w)
    request = RunRequest(argv=tuple(argv), script=False, cwd=".", env=(), stdin=None)
    return Running("c1", request, pid, os.pidfd_open(pid), CommandCgroup(()),
                   trio.lowlevel.FdStream(out_r), trio.lowlevel.FdStream(err_r), None)


def test_the_exit_event_is_queued_before_the_final_frame_is_sent() -> None:
    order: list[str] = []
    events: list[dict[str, Any]] = []

    def ended(running: Running) -> None:
        order.append("exit event")
        events.append(dict(running.final or {}))

    async def main() -> None:
        running = _running(["sh", "-c", "echo out; exit 3"])
        send, receive = trio.open_memory_channel[bytes](64)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervise, running, Framer(1 << 20), send, None, ended)
            async for lines in receive:  # each a frame's line, or b"" (no tail to send)
                for line in lines.splitlines():
                    order.append("final frame" if "final" in json.loads(line) else "frame")

    trio.run(main)
    assert order.count("exit event") == 1 and order[-2:] == ["exit event", "final frame"]
    assert events[0]["exit_code"] == 3


class _Usage:
    """What wait4 reports of a process: its CPU and its high-water mark."""

    def __init__(self, cpu_s: float) -> None:
        self.ru_utime, self.ru_stime, self.ru_maxrss = cpu_s / 2, cpu_s / 2, 1024


def test_a_commands_cpu_is_counted_from_its_launch_not_from_its_zygotes_start() -> None:
    """A spawned zygote's interpreter start (its CPU before the launch, read by the door) is not its command's."""
    running = _running(["true"])
    os.waitpid(running.pid, 0)
    os.close(running.pidfd)
    running.setup_cpu_ns = 20_000_000
    assert _outcome(running, 0, _Usage(0.025)).cpu_ms == 5
    running.setup_cpu_ns = 30_000_000  # the two clocks never read below zero
    assert _outcome(running, 0, _Usage(0.025)).cpu_ms == 0
    running.setup_cpu_ns = 0
    assert _outcome(running, 0, _Usage(0.025)).cpu_ms == 25



def test_the_response_ends_with_the_final_frame_before_the_command_is_cleaned_up(monkeypatch: Any) -> None:
    """The cgroup's removal and the last handles come after the body's end, not between the final and the end."""
    from doors.shell import _command

    cleaning, release = trio.Event(), trio.Event()
    real_clean_up = _command.clean_up

    async def held_clean_up(running: Running) -> None:
        cleaning.set()
        await release.wait()
        await real_clean_up(running)

    monkeypatch.setattr(_command, "clean_up", held_clean_up)
    body: list[str] = []

    async def read_body(receive: trio.MemoryReceiveChannel[bytes]) -> None:
        async for _ in receive:
            pass
        body.append("ended")

    async def main() -> None:
        running = _running(["true"])
        send, receive = trio.open_memory_channel[bytes](64)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervise, running, Framer(1 << 20), send)
            nursery.start_soon(read_body, receive)
            await cleaning.wait()  # the command ended; its cleanup is held
            await trio.testing.wait_all_tasks_blocked()
            body.append("cleanup held")
            release.set()

    trio.run(main)
    assert body == ["ended", "cleanup held"]


_READS_AND_SENDS = """
import fcntl, os, resource, sys
sys.path.insert(0, {root!r})
if {keep!r}:
    from doors.shell._command import keep_read_buffers
    keep_read_buffers()
read_end, write_end = os.pipe()
fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 1 << 20)  # as the door\'s pipes
data = b"x" * 65536
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
counts = []
for _ in range(20):
    before = faults()
    held = []
    for _ in range(4):  # frames queued at once, then all sent and freed: the door's pattern
        for _ in range(16):
            os.write(write_end, data)
        held.append(os.read(read_end, 1 << 20))
    del held
    counts.append(faults() - before)
print(max(counts[5:]))
"""


def test_the_doors_reads_reuse_the_pages_of_output_already_sent() -> None:
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

    def most_faults(keep: bool) -> int:
        script = _READS_AND_SENDS.format(root=root, keep=keep)
        return int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)

    assert most_faults(keep=True) < 64  # 4 MiB read: 1024 fresh pages a round when malloc hands back its heap
    assert most_faults(keep=False) >= 256  # the pattern does make glibc's default fault pages in (the test's own check)


async def test_a_bulk_read_short_of_the_pipe_waits_a_moment_for_more_and_no_other_read_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    from doors.shell import _command

    pauses: list[float] = []
    real_sleep = trio.sleep

    async def recording(seconds: float) -> None:
        pauses.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(trio, "sleep", recording)
    for size in (10, 200_000, _command.READ_BYTES):  # a line, a bulk writer's share, a full pipe (more behind it)
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _command.READ_BYTES)
        os.write(write_end, b"x" * size)
        os.close(write_end)
        send, receive = trio.open_memory_channel[Any](8)
        await _command._pump(trio.lowlevel.FdStream(read_end), "stdout", Framer(4 * size, binary=True), send)
        _header, data = receive.receive_nowait()
        assert len(data) == size
    assert pauses == [_command.BULK_PAUSE_S]
