"""Copy bytes both ways between two sockets until both ends close or the tunnel goes idle.

The bytes move socket → pipe → socket with splice(2): the kernel moves pages, Python never holds the data.
A client that is not a plain socket (a door over mutual TLS) is relayed by reading and writing instead.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from dataclasses import dataclass

import trio

from doors._transport import TlsFailure

CHUNK = 256 * 1024
PIPE_BYTES = 1024 * 1024
_SPLICE_FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_ONE_WAY = "one-way-closed"  # internal: a side that cannot half-close ended the tunnel at the other's EOF


@dataclass
class RelayResult:
    """Bytes each way and how the relay ended."""

    up: int = 0
    down: int = 0
    ended: str = "closed"


class _Pipe:
    """A non-blocking pipe to splice through (closed by the caller)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # the default size (64 KiB) still works, only slower
            fcntl.fcntl(self.write_fd, _F_SETPIPE_SZ, PIPE_BYTES)

    def close(self) -> None:
        os.close(self.read_fd)
        os.close(self.write_fd)


async def _splice_in(src: trio.socket.SocketType, pipe: _Pipe) -> int:
    """Move what `src` has into the pipe; 0 at end of stream."""
    while True:
        try:
            return os.splice(src.fileno(), pipe.write_fd, CHUNK, flags=_SPLICE_FLAGS)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(src)


async def _splice_out(pipe: _Pipe, dst: trio.socket.SocketType, count: int) -> None:
    """Move `count` bytes from the pipe into `dst`."""
    while count:
        try:
            count -= os.splice(pipe.read_fd, dst.fileno(), count, flags=_SPLICE_FLAGS)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(dst)


async def _pump(src: trio.SocketStream, dst: trio.SocketStream, result: RelayResult, up: bool,
                scope: trio.CancelScope, idle_s: float) -> None:
    pipe = _Pipe()
    try:
        while moved := await _splice_in(src.socket, pipe):
            await _splice_out(pipe, dst.socket, moved)
            if up:
                result.up += moved
            else:
                result.down += moved
            scope.deadline = trio.current_time() + idle_s
        dst.socket.shutdown(socket.SHUT_WR)
    except OSError as exc:
        result.ended = "reset" if exc.errno != errno.EINVAL else "splice-unsupported"
        scope.cancel()
    finally:
        pipe.close()


async def _copy(src: trio.abc.Stream, dst: trio.abc.Stream, result: RelayResult, up: bool,
                scope: trio.CancelScope, idle_s: float) -> None:
    """Read and write (a TLS stream has no fd to splice); a `dst` that cannot half-close ends the tunnel."""
    try:
        while data := await src.receive_some(CHUNK):
            await dst.send_all(data)
            if up:
                result.up += len(data)
            else:
                result.down += len(data)
            scope.deadline = trio.current_time() + idle_s
        if isinstance(dst, trio.abc.HalfCloseableStream):
            await dst.send_eof()
            return
        result.ended = _ONE_WAY
    except (trio.BrokenResourceError, trio.ClosedResourceError, TlsFailure, OSError):
        result.ended = "reset"
    scope.cancel()


async def relay(client: trio.abc.Stream, upstream: trio.SocketStream, idle_s: float) -> RelayResult:
    """Relay until both directions reach EOF, one side resets, or nothing moves for `idle_s`."""
    result = RelayResult()
    with trio.CancelScope(deadline=trio.current_time() + idle_s) as scope:
        async with trio.open_nursery() as nursery:
            if isinstance(client, trio.SocketStream):
                nursery.start_soon(_pump, client, upstream, result, True, scope, idle_s)
                nursery.start_soon(_pump, upstream, client, result, False, scope, idle_s)
            else:
                nursery.start_soon(_copy, client, upstream, result, True, scope, idle_s)
                nursery.start_soon(_copy, upstream, client, result, False, scope, idle_s)
    if result.ended == _ONE_WAY:
        result.ended = "closed"
    elif scope.cancelled_caught and result.ended == "closed":
        result.ended = "idle-timeout"
    return result
