"""Relay the app's stdio through pipes the launcher owns, wherever the launcher's own fd is not a terminal.

Passed as it was, the launcher's stdout or stderr file was the app's too: it could ftruncate it, rewind it,
or write after the launcher's lines; its stdin file it could read past where the launcher stopped. Instead
the app gets one pipe per fd: the launcher copies its stdin into one and the app's output out of the others,
from the supervisor's single-threaded loop, and at the end (every process of the app gone, so each pipe
ends) it drains them before it prints a line of its own. The bytes pass unchanged (stdout may be binary);
a line the app left unfinished on a stream the launcher writes to next is ended first, so the launcher's
lines start on their own. The launcher's fds keep their flags: a write to one that may block (a pipe, a
socket) is made only when poll says it is writable, PIPE_BUF at a time, which a pipe then always takes.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from launcher.lifecycle.ptyrelay import CHUNK, DRAIN_IDLE_S, DRAIN_MAX_S, READ, WRITE, Channel, poll_once

ROUND_BYTES = CHUNK  # at most this much written to one launcher fd per loop round: door messages wait behind it
STDIN = 0


def _polls(fd: int) -> bool:
    """Whether epoll can wait on `fd`: not for regular files, block devices or /dev/null (always ready: EPERM),
    nor for a closed launcher fd (EBADF: its copy ends on the first read or write)."""
    poller = select.epoll()
    try:
        poller.register(fd, select.EPOLLIN | select.EPOLLOUT)
    except OSError:
        return False
    finally:
        poller.close()
    return True


def _writable_now(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return bool(poller.poll(0))


@dataclass
class Copy:
    """One of the app's stdio fds: bytes from `source` to `sink` through a Channel. Exactly one end is ours
    (the pipe); the other is the launcher's own fd, whose flags are never changed."""

    index: int
    source: int
    sink: int
    source_polls: bool
    sink_polls: bool
    app_end: int | None  # the pipe end the app gets; closed here once it is forked
    channel: Channel = field(default_factory=Channel)

    @property
    def ours_is_sink(self) -> bool:
        return self.index == STDIN

    def wanted(self) -> dict[int, int]:
        """fd → events this copy waits for now."""
        wanted: dict[int, int] = {}
        if self.channel.wants_read() and self.source_polls:
            wanted[self.source] = READ
        reads_on_demand = self.channel.wants_read() and not self.source_polls
        if self.sink_polls and (self.channel.wants_write() or reads_on_demand):
            wanted[self.sink] = wanted.get(self.sink, 0) | WRITE
        return wanted

    def pull(self) -> None:
        try:
            data = os.read(self.source, CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # EIO, EBADF: the source is gone
            data = b""
        self.channel.received(data)

    def push(self) -> None:
        """Write what waits, as much as the sink takes now without blocking: to a launcher fd that may block,
        PIPE_BUF at a time while poll says writable, at most ROUND_BYTES a round (the loop comes back for the
        rest); to our own pipe (non-blocking) or a file (never blocks, never polled) all of it."""
        careful = self.sink_polls and not self.ours_is_sink
        budget = ROUND_BYTES if careful else len(self.channel.pending)
        sent = 0
        while self.channel.wants_write() and sent < budget:
            if careful and sent and not _writable_now(self.sink):
                return
            size = select.PIPE_BUF if careful else len(self.channel.pending)
            try:
                count = os.write(self.sink, self.channel.pending[:size])
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EPIPE, EBADF: nowhere to put it; what comes later is dropped
                self.channel.sink_failed()
                if self.ours_is_sink:  # the app closed its stdin: leave the rest of the launcher's unread
                    self.channel.source_open = False
                return
            if not count:
                return
            self.channel.sent(count)
            sent += count

    def on_ready(self, fd: int, events: int) -> None:
        if fd == self.source and events & READ:
            self.pull()
            if self.ours_is_sink or not self.sink_polls:
                self.push()
        if fd == self.sink and events & WRITE:
            if not self.source_polls and not self.channel.pending and self.channel.wants_read():
                self.pull()
            self.push()


class PipeRelay:
    """The pipes of the app's non-terminal stdio fds, relayed from the launcher's single-threaded loop."""

    def __init__(self, copies: list[Copy]) -> None:
        self._copies = copies
        self._closed = False

    @classmethod
    def open(cls, indexes: Iterable[int], launcher_fds: tuple[int, int, int] = (0, 1, 2)) -> PipeRelay:
        """A pipe for each of `indexes` (0 stdin, 1 stdout, 2 stderr) in place of the launcher's fd."""
        copies: list[Copy] = []
        try:
            for index in indexes:
                read_end, write_end = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
                theirs = launcher_fds[index]
                if index == STDIN:
                    copy = Copy(index, theirs, write_end, _polls(theirs), True, read_end)
                else:
                    copy = Copy(index, read_end, theirs, True, _polls(theirs), write_end)
                copies.append(copy)
                if copy.app_end is not None:
                    os.set_blocking(copy.app_end, True)  # the app's end behaves as any pipe would
        except BaseException:
            PipeRelay(copies).close(frozenset())
            raise
        return cls(copies)

    def app_stdio(self) -> dict[int, int]:
        """Target fd → the pipe end the app gets, for each relayed index."""
        stdio = {copy.index: copy.app_end for copy in self._copies}
        assert None not in stdio.values(), "app_stdio() after app_started()"
        return {index: end for index, end in stdio.items() if end is not None}

    def app_started(self) -> None:
        """Once the app is forked: drop its ends here, so each pipe ends when the app's side is gone."""
        for copy in self._copies:
            if copy.app_end is not None:
                os.close(copy.app_end)
                copy.app_end = None

    def fds_to_watch(self) -> dict[int, int]:
        self._settle()
        wanted: dict[int, int] = {}
        for copy in self._copies:
            for fd, events in copy.wanted().items():
                wanted[fd] = wanted.get(fd, 0) | events
        return wanted

    def on_ready(self, fd: int, events: int) -> None:
        for copy in self._copies:
            if fd in (copy.source, copy.sink):
                copy.on_ready(fd, events)

    def on_signal(self, signum: int) -> None:
        """Nothing: pipes have no window size."""

    def say(self, line: str) -> None:
        """One line of the launcher's (inert text) while the app runs: into the stderr pipe's stream, on a line of
        its own (an unfinished line of the app's is ended first), so its order among the app's output holds."""
        copy = self._copy(2)
        if copy is None or not copy.channel.sink_open:
            with contextlib.suppress(OSError):
                os.write(2, line.encode() + b"\n")
            return
        copy.channel.queue((b"" if copy.channel.at_line_start else b"\n") + line.encode() + b"\n")

    def _copy(self, index: int) -> Copy | None:
        return next((copy for copy in self._copies if copy.index == index), None)

    def _settle(self) -> None:
        """The stdin pipe, once the launcher's stdin ended and all of it is passed on: closed, so the app reads EOF."""
        for copy in self._copies:
            if copy.ours_is_sink and copy.channel.done and copy.sink >= 0:
                os.close(copy.sink)
                copy.sink = -1

    def _stop_stdin(self) -> None:
        for copy in self._copies:
            if copy.ours_is_sink:
                copy.channel.source_open = False
                copy.channel.sink_failed()
        self._settle()

    def run_once(self, timeout_s: float) -> bool:
        """One round on the relay's own poll (the drain; tests); False when nothing was ready."""
        return poll_once(self, timeout_s)

    def drain(self, idle_s: float = DRAIN_IDLE_S, max_s: float = DRAIN_MAX_S) -> None:
        """After the app ended: stop its stdin, pass on what it wrote last, until each pipe ends or nothing moves."""
        self._stop_stdin()
        deadline = time.monotonic() + max_s
        while not all(copy.channel.done for copy in self._copies) and (left := deadline - time.monotonic()) > 0:
            if not self.run_once(min(idle_s, left)):
                return

    def end_lines(self, indexes: frozenset[int]) -> None:
        """End a line the app left unfinished on each of `indexes`, and on an output sharing its file (`2>&1`)."""
        outputs = [copy for copy in self._copies if not copy.ours_is_sink]
        files = {_file_of(copy.sink) for copy in outputs if copy.index in indexes} - {None}
        for copy in outputs:
            next_is_ours = copy.index in indexes or _file_of(copy.sink) in files
            if next_is_ours and not copy.channel.at_line_start and copy.channel.sink_open:
                with contextlib.suppress(OSError):
                    os.write(copy.sink, b"\n")
                copy.channel.at_line_start = True

    def close(self, end_lines_on: frozenset[int] = frozenset({2})) -> None:
        """Drain, end unfinished lines where the launcher writes next, close the pipes; safe more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            if all(copy.app_end is None for copy in self._copies):  # the app was started: its last words wait
                self.drain()
            self.end_lines(end_lines_on)
        finally:
            self.app_started()
            for copy in self._copies:
                ours = copy.sink if copy.ours_is_sink else copy.source
                if ours >= 0:
                    with contextlib.suppress(OSError):
                        os.close(ours)


def _file_of(fd: int) -> tuple[int, int] | None:
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return info.st_dev, info.st_ino
