"""A streamed answer owns its fd: closed at its end, and also when the answer is dropped before it started
(an async generator that never ran never runs its `finally`)."""

from __future__ import annotations

import errno
import gc
import os
import tempfile
from typing import IO

import pytest

from doors.fs import _reads
from doors.fs._reads import READ_CHUNK, HeldFd, _stream_file, read_cached


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


def _large_file(scratch: IO[bytes], size: int) -> bytes:
    content = os.urandom(size)
    scratch.write(content)
    scratch.flush()
    return content


async def test_a_large_file_streams_whole_from_the_page_cache() -> None:
    with tempfile.NamedTemporaryFile() as scratch:
        content = _large_file(scratch, 3 * READ_CHUNK + 9)
        pieces = [piece async for piece in _stream_file(HeldFd(os.dup(scratch.fileno())), 7, len(content) - 7)]
        assert b"".join(pieces) == content[7:] and len(pieces) == 4


async def test_what_the_cache_does_not_hold_is_read_in_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """RWF_NOWAIT refusing (the bytes are on the disk only): the read goes to a worker thread, same bytes."""
    def not_cached(fd: int, buffers: list[bytearray], offset: int, flags: int = 0) -> int:
        raise BlockingIOError(errno.EAGAIN, "not cached")

    monkeypatch.setattr(_reads.os, "preadv", not_cached)
    with tempfile.NamedTemporaryFile() as scratch:
        content = _large_file(scratch, 2 * READ_CHUNK)
        pieces = [piece async for piece in _stream_file(HeldFd(os.dup(scratch.fileno())), 0, len(content))]
        assert b"".join(pieces) == content


def test_the_event_loop_never_reads_from_the_disk() -> None:
    """A file dropped from the page cache is not read by read_cached (the caller's thread would wait on the
    disk): None, so the door reads it in a worker. The end of the file is None too (the worker says b"")."""
    with tempfile.NamedTemporaryFile() as scratch:
        content = _large_file(scratch, 1 << 20)
        fd = scratch.fileno()
        if read_cached(fd, 4096, 0) is None:
            pytest.skip("this file system has no RWF_NOWAIT reads: every read goes to a worker")
        assert read_cached(fd, 4096, 4096) == content[4096:8192]
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert read_cached(fd, 4096, 0) is None
        assert read_cached(fd, 4096, len(content)) is None
