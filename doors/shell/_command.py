"""One running command: its pipes, its cgroup, its timeout, and the frames it makes, in the door's nursery.

The order at the end is the point: wait for the command's own process (or its timeout: SIGTERM to every
member of its cgroup, a grace period, then SIGKILL to every member), reap it (its rusage), kill whatever it
left behind in its cgroup (a double-fork, a daemon), drain both pipes to their EOF, then the tails and the
final record. Whatever ends the wait (the client gone, the session ending), the cgroup is emptied and removed.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from doors.shell._cgroup import CommandCgroup
from doors.shell._output import Frame, Framer, Outcome
from doors.shell._request import RunRequest
from doors.shell._stdio import TTY_EOF

KILL_GRACE_S = 2.0  # between SIGTERM and SIGKILL on a timeout: time for a clean exit, not a threshold any test uses
READ_BYTES = 1024 * 1024  # as large as the pipes (server.py sets them so): fewer, larger frames
HEARTBEAT_S = 5.0  # how often a quiet command says it still runs: a client that left is then noticed and it is killed
FRAME_BUFFER = 64  # frames a slow client lets pile up before the command's pipes stop being read
COALESCE_BYTES = 1024 * 1024  # what one response chunk may join of the frames already queued
BULK_READ, BULK_PAUSE_S = 128 * 1024, 0.0005  # docs/decisions/bench.md, "shpipe"
LARGE_PART = 64 * 1024  # a part this large goes out as it is, not joined (copied) with the small ones around it
# glibc's malloc (mallopt's M_MMAP_THRESHOLD, M_TRIM_THRESHOLD): a read of up to READ_BYTES from the heap, and
# the heap's free top kept up to a few of them, so the next reads land in pages already mapped.
MMAP_THRESHOLD, TRIM_THRESHOLD = (-3, 2 * READ_BYTES), (-1, 8 * READ_BYTES)


def keep_read_buffers() -> None:
    """Make the door's malloc reuse the pages of the output it has sent for the next reads: glibc's own choice
    (an mmap per read, the heap trimmed as its free top passes 2 MiB) made each MiB a fresh 256 pages to fault
    in, 12% of the door's CPU (docs/decisions/bench.md, "shpipe"). What it keeps is at most TRIM_THRESHOLD."""
    import ctypes  # trio has imported it already

    libc = ctypes.CDLL(None)
    for option, value in (MMAP_THRESHOLD, TRIM_THRESHOLD):
        libc.mallopt(option, value)


@dataclass
class Running:
    """A command that was started: the door's handles on it."""

    command_id: str
    request: RunRequest
    pid: int
    pidfd: int
    cgroup: CommandCgroup
    stdout: trio.lowlevel.FdStream
    stderr: trio.lowlevel.FdStream
    stdin: trio.lowlevel.FdStream | None
    started_at: float = field(default_factory=time.monotonic)
    killed_by: str | None = None
    timed_out: bool = False
    final: dict[str, Any] | None = None
    setup_cpu_ns: int = 0  # what its zygote had used before the launch: not the command's CPU


async def _pump(pipe: trio.lowlevel.FdStream, stream: str, framer: Framer,
                send: trio.MemorySendChannel[Frame]) -> None:
    async with pipe:
        while data := await _read(pipe):
            frame = framer.output_frame(stream, data)
            if frame:
                await send.send(frame)  # a header and its bytes in one item: nothing comes between them
            if BULK_READ <= len(data) < READ_BYTES:
                # A bulk writer (a build's log, a cat) that is not ahead of the door: let its next writes pile up
                # for a moment, so the next frame is larger. Fewer frames is less of the door's and its client's
                # CPU and fewer wake-ups of the writer; a frame is late by BULK_PAUSE_S at most.
                await trio.sleep(BULK_PAUSE_S)


async def _read(pipe: trio.lowlevel.FdStream) -> bytes:
    """The next bytes, b"" at the end: a pty's master reads EIO once the last slave is closed."""
    try:
        return bytes(await pipe.receive_some(READ_BYTES))
    except trio.BrokenResourceError as exc:
        if isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.EIO:
            return b""
        raise
    except OSError as exc:
        if exc.errno == errno.EIO:
            return b""
        raise


async def _feed_stdin(pipe: trio.lowlevel.FdStream, data: bytes) -> None:
    async with pipe:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await pipe.send_all(data)


async def _heartbeat(running: Running, framer: Framer, send: trio.MemorySendChannel[Frame]) -> None:
    while True:
        await trio.sleep(HEARTBEAT_S)
        await send.send(framer.alive(int((time.monotonic() - running.started_at) * 1000)))


async def _wait_exit(running: Running) -> None:
    """Until the command's own process has exited, or its timeout has come and gone with the kill."""
    deadline = running.started_at + running.request.timeout_ms / 1000
    with trio.move_on_at(trio.current_time() + max(deadline - time.monotonic(), 0)):
        await trio.lowlevel.wait_readable(running.pidfd)
        return
    running.timed_out, running.killed_by = True, "timeout"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(running.pid, signal.SIGTERM)
    running.cgroup.signal_members(signal.SIGTERM)
    with trio.move_on_after(KILL_GRACE_S):
        await trio.lowlevel.wait_readable(running.pidfd)
        return
    await running.cgroup.kill_all()
    await trio.lowlevel.wait_readable(running.pidfd)


def _reap(running: Running) -> tuple[int, Any]:
    while True:
        try:
            _, status, usage = os.wait4(running.pid, 0)
            return status, usage
        except ChildProcessError:
            return 0, None
        except InterruptedError:
            continue


After = Callable[[Running, Outcome], Awaitable[dict[str, Any] | None]]
Ended = Callable[[Running], None]


async def supervise(running: Running, framer: Framer, send: trio.MemorySendChannel[Frame],
                    after: After | None = None, ended: Ended | None = None) -> None:
    """Run `running` to its end, sending every frame on `send`, the final record last; close `send`, then clean up
    (the response ends with the final record: its cgroup's removal and the last handles are not on its path).
    `after` (the overlay's apply) runs once the command has ended; what it answers is a frame before the final.
    `ended` (the door's shell.exit event) is called with `running.final` set, before the final frame is sent."""
    try:
        await send.send(framer.started(running.command_id, running.pid))
        async with trio.open_nursery() as beating:
            beating.start_soon(_heartbeat, running, framer, send)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, running.stdout, "stdout", framer, send)
                nursery.start_soon(_pump, running.stderr, "stderr", framer, send)
                if running.stdin is not None and not running.request.stdin_pipe:
                    given = running.request.stdin
                    nursery.start_soon(_feed_stdin, running.stdin,
                                       given if given is not None else TTY_EOF if running.request.tty else b"")
                await _wait_exit(running)
                status, usage = _reap(running)
                await running.cgroup.kill_all()  # what it left behind: the pipes close with them
            beating.cancel_scope.cancel()
        await send.send(framer.tails())
        outcome = _outcome(running, status, usage)
        answer = await after(running, outcome) if after is not None else None
        if answer is not None:
            await send.send(framer.applied(answer))
        running.final = outcome.record()
        if ended is not None:
            ended(running)
        await send.send(framer.final(outcome))
        send.close()  # the response ends with its final record: the cleanup below is not on its path
    finally:
        with trio.CancelScope(shield=True):
            await clean_up(running)
        send.close()  # on every other way out, once everything of it is gone (as before)


def _outcome(running: Running, status: int, usage: Any) -> Outcome:
    if running.killed_by is None and os.WIFSIGNALED(status) and running.cgroup.oom_kills():
        running.killed_by = "memory"
    used_s = usage.ru_utime + usage.ru_stime if usage is not None else 0.0
    cpu_ms = max(0, int(used_s * 1000 - running.setup_cpu_ns / 1e6))
    # Not ru_maxrss: exec keeps the high-water mark of the forked door image (~47 MB) it replaced. The cgroup's
    # peak counts only what the command's own processes were charged.
    peak = running.cgroup.memory_peak_kb()
    return Outcome(status, timed_out=running.timed_out, killed_by=running.killed_by,
                   wall_ms=int((time.monotonic() - running.started_at) * 1000), cpu_ms=cpu_ms,
                   max_rss_kb=peak if peak is not None else int(usage.ru_maxrss) if usage is not None else 0)


async def clean_up(running: Running) -> None:
    """Kill and reap whatever is left, close the handles, remove the cgroup."""
    await running.cgroup.kill_all()
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(running.pid, os.WNOHANG) == (0, 0):  # not reaped yet: killed above, so it is ending
            os.kill(running.pid, signal.SIGKILL)
            await trio.lowlevel.wait_readable(running.pidfd)
            os.waitpid(running.pid, 0)
    for pipe in (running.stdout, running.stderr, running.stdin):
        if pipe is not None:
            await pipe.aclose()
    os.close(running.pidfd)
    for _ in range(100):
        try:
            running.cgroup.remove()
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return
            await trio.sleep(0.01)


class ChannelBody:
    """A response body read from the command's frame channel; closing it early (the client left) kills it."""

    def __init__(self, receive: trio.MemoryReceiveChannel[Frame], on_abandon: Callable[[], None],
                 on_end: Callable[[], None] = lambda: None) -> None:
        self._receive = receive
        self._on_abandon = on_abandon
        self._on_end = on_end  # the whole body was taken, or it was closed
        self._done = False
        self._ready: collections.deque[bytes] = collections.deque()  # parts of frames taken, not yet handed out

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if not self._ready:
            try:
                self._take(await self._receive.receive())
            except trio.EndOfChannel:
                self._done = True
                self._on_end()
                raise StopAsyncIteration from None
        if len(self._ready[0]) >= LARGE_PART:
            return self._ready.popleft()
        # Small parts and what is already queued behind them go out together: one chunk and one TLS record
        # instead of one per frame, and never a wait for more (frames stay live). A large part ends the join.
        lines: list[bytes] = []
        size = 0
        while size < COALESCE_BYTES:
            if not self._ready:
                try:
                    self._take(self._receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            if len(self._ready[0]) >= LARGE_PART:
                break
            lines.append(self._ready.popleft())
            size += len(lines[-1])
        return b"".join(lines)

    def _take(self, frame: Frame) -> None:
        self._ready.extend((frame,) if isinstance(frame, bytes) else frame)

    async def aclose(self) -> None:
        if not self._done:
            self._on_abandon()
        self._on_end()
        await self._receive.aclose()
