"""A streamed answer owns its fd: closed at its end, and also when the answer is dropped before it started
(an async generator that never ran never runs its `finally`)."""

from __future__ import annotations

import errno
import gc
import os
import tempfile

from doors.fs._reads import HeldFd, _stream_file


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as err:
        return err.errno == errno.EBADF
    return False


def test_a_body_dropped_before_it_started_closes_its_fd() -> None:
    with tempfile.TemporaryFile() as scratch:
        fd = os.dup(scratch.fileno())
        body = _stream_file(HeldFd(fd), 0, 10)
        assert not _closed(fd)
        del body
        gc.collect()
        assert _closed(fd)


def test_close_is_once_only() -> None:
    with tempfile.TemporaryFile() as scratch:
        held = HeldFd(os.dup(scratch.fileno()))
        fd = held.fd
        held.close()
        reused = os.dup(scratch.fileno())  # the kernel may hand the same number out again
        try:
            held.close()
            assert reused != fd or not _closed(reused)
        finally:
            os.close(reused)


async def test_a_body_read_to_its_end_closes_its_fd() -> None:
    with tempfile.TemporaryFile() as scratch:
        scratch.write(b"0123456789")
        scratch.flush()
        fd = os.dup(scratch.fileno())
        pieces = [piece async for piece in _stream_file(HeldFd(fd), 0, 10)]
        assert pieces == [b"0123456789"] and _closed(fd)
