"""Frames on a Unix stream socket, with fds riding along as SCM_RIGHTS. Both ends: the client blocks, the
daemon reads what is there (MSG_DONTWAIT) and sends with a bound on how long a peer that does not read may hold
it."""

from __future__ import annotations

import array
import contextlib
import os
import socket
from collections.abc import Sequence
from typing import Any

from launcher.daemon.protocol import FrameReader, ProtocolError, encode_frame

MAX_FDS = 8  # more than a request may carry, so that too many are seen (and refused), not cut silently
SEND_TIMEOUT_S = 2.0
_ANCILLARY = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)


def send_frame(conn: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    """One whole frame, its fds (if any) attached to its first byte."""
    data = encode_frame(message)
    if fds:
        sent = conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        data = data[sent:]
    if data:
        conn.sendall(data)


def send_bounded(conn: socket.socket, message: dict[str, Any]) -> bool:
    """The daemon's send: at most SEND_TIMEOUT_S for a peer that does not read; False when it could not."""
    try:
        conn.settimeout(SEND_TIMEOUT_S)
        send_frame(conn, message)
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            conn.setblocking(False)


def receive_available(conn: socket.socket, reader: FrameReader, fds: list[int]) -> bool:
    """Read what has arrived into `reader`, collecting passed fds into `fds` (close-on-exec); False at EOF.

    ProtocolError when the fds did not all fit (MSG_CTRUNC: some were dropped by the kernel) or a frame is too
    large; BlockingIOError propagates only if nothing at all was readable."""
    data, ancillary, flags, _ = conn.recvmsg(65536, _ANCILLARY, socket.MSG_CMSG_CLOEXEC | socket.MSG_DONTWAIT)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(payload[: len(payload) - len(payload) % received.itemsize])
            fds.extend(received)
    if flags & socket.MSG_CTRUNC:
        raise ProtocolError(f"more than {MAX_FDS} fds were passed")
    if not data:
        return False
    reader.feed(data)
    return True


def read_frame(conn: socket.socket, reader: FrameReader) -> dict[str, Any] | None:
    """The client's blocking read of the next frame; None at EOF."""
    while True:
        frame = reader.next_frame()
        if frame is not None:
            return frame
        data = conn.recv(65536)
        if not data:
            return None
        reader.feed(data)


def close_fds(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
