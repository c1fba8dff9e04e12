"""Read handlers of the fs door: stat, list, read (whole or a byte range, large files streamed)."""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator

import trio

from doors._http import Request, Response, json_body
from doors._refusal import DoorRefused
from doors.fs._dispatch import Call
from doors.fs._paths import WorkspacePath
from doors.fs._prelude import Answered, FsHandlers, json_ok, query_value, target_json
from doors.fs._request import ByteRange, parse_range
from doors.fs._rules import Facts, Op, Target, is_hidden, refuse

READ_CHUNK = 256 * 1024  # a large file is sent this much at a time (what one stalled reader holds)
SMALL_READ = 256 * 1024  # files up to this size are answered in one piece
MAX_LIST = 10_000  # entries in one listing (the answer says when more were left out)
Batch = tuple[list[tuple[str, Target]], bool]  # named here: the handlers' `list` method shadows the builtin
LIST_BATCH = 64  # entries read, encoded and held at a time while a listing streams


class ReadHandlers(FsHandlers):
    """stat, list and read."""

    async def stat(self, request: Request) -> Response:
        return await self.run(lambda: self._stat_or_list(request, Op.STAT))

    async def list(self, request: Request) -> Response:
        return await self.run(lambda: self._stat_or_list(request, Op.LIST))

    async def _stat_or_list(self, request: Request, op: Op) -> Response:
        call = self.begin(request, op, request.rest)
        return await trio.to_thread.run_sync(self._stat_or_list_sync, call)

    def _stat_or_list_sync(self, call: Call) -> Response:
        try:
            fd, real, target = self.workspace.locate(call.path)
        except DoorRefused as refused:
            return self.dispatch.refused(call, refused.refusal)
        try:
            facts = Facts(target=target, real_path=real)
            if call.op is Op.STAT:
                return self.dispatch.conclude(call, facts, lambda: json_ok(target_json(call.path, target)))
            return self.dispatch.conclude(call, facts, lambda: self._listing(call.path, real or call.path, fd))
        finally:
            if fd >= 0:
                os.close(fd)

    def _listing(self, path: WorkspacePath, real: WorkspacePath, fd: int) -> Response:
        # The first batch now, in the worker: a directory the kernel will not list is refused before the 200.
        first = self.workspace.list_batch(fd, None, min(LIST_BATCH, MAX_LIST))
        held = HeldFd(os.dup(fd))
        return Response(200, (("content-type", "application/json"),), self._listing_pieces(path, real, held, first))

    async def _listing_pieces(self, path: WorkspacePath, real: WorkspacePath, dir_fd: HeldFd,
                              batch: Batch) -> AsyncIterator[bytes]:
        """The listing's JSON a batch of entries at a time, the next batch read only once the client took the
        last: one connection holds one batch, not the directory (a client that stops reading is cut)."""
        try:
            yield b'{"path":' + json_body(path.text or ".") + b',"entries":['
            listed, more = batch
            counted, separator = 0, b""
            while True:
                counted += len(listed)
                entries = [json_body({"name": name, "kind": target.kind, "size": target.size, "etag": target.etag})
                           for name, target in listed
                           if not is_hidden(path.child(name), self.rows) and not is_hidden(real.child(name), self.rows)]
                if entries:
                    yield separator + b",".join(entries)
                    separator = b","
                if not more or counted >= MAX_LIST:
                    break
                listed, more = await trio.to_thread.run_sync(
                    self.workspace.list_batch, dir_fd.fd, listed[-1][0], min(LIST_BATCH, MAX_LIST - counted))
            yield b'],"truncated":' + (b"true" if more else b"false") + b"}"
        finally:
            dir_fd.close()

    async def read(self, request: Request) -> Response:
        return await self.run(lambda: self._read(request))

    async def _read(self, request: Request) -> Response:
        call = self.begin(request, Op.READ, request.rest)
        wanted = parse_range(request.header("range"), query_value(request, "offset"), query_value(request, "length"))
        if isinstance(wanted, str):
            raise Answered(self.dispatch.refused(call, refuse(400, "range", wanted, "ask for bytes=START-END")))
        return await trio.to_thread.run_sync(self._read_sync, call, wanted)

    def _read_sync(self, call: Call, wanted: ByteRange | None) -> Response:
        try:
            fd, real, target = self.workspace.locate(call.path)
        except DoorRefused as refused:
            return self.dispatch.refused(call, refused.refusal)
        try:
            facts = Facts(target=target, real_path=real)
            return self.dispatch.conclude(call, facts, lambda: self._open_read(call, fd, target, wanted))
        finally:
            if fd >= 0:
                os.close(fd)

    def _open_read(self, call: Call, path_fd: int, target: Target, wanted: ByteRange | None) -> Response:
        # Reopen beneath the root (an O_PATH fd cannot be read) and insist it is the inode judged.
        fd = self.workspace.open(call.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            opened, held = os.fstat(fd), os.fstat(path_fd)
            if (opened.st_dev, opened.st_ino) != (held.st_dev, held.st_ino):
                raise DoorRefused(refuse(409, "changed", f"{call.path} changed while it was opened", "retry"))
            size = opened.st_size
            bounds = wanted.bounds(size) if wanted is not None else (0, size)
            if bounds is None:
                raise DoorRefused(
                    refuse(
                        400, "range", f"the range starts past the end ({size} bytes)", "ask for a range inside the file"
                    )
                )
        except BaseException:
            os.close(fd)
            raise
        # An empty file has no byte to range over: it is answered whole.
        return _file_response(fd, target, bounds, partial=wanted is not None and size > 0, size=size)


def _file_response(fd: int, target: Target, bounds: tuple[int, int], *, partial: bool, size: int) -> Response:
    """Small files in one piece; large ones streamed in READ_CHUNK pieces (bounded memory). Closes fd."""
    offset, length = bounds
    headers: list[tuple[str, str]] = [("content-type", "application/octet-stream")]
    if target.etag:
        headers.append(("etag", target.etag))
    if partial:
        headers.append(("content-range", f"bytes {offset}-{offset + length - 1}/{size}"))
    status = 206 if partial else 200
    if length <= SMALL_READ:
        try:
            data = os.pread(fd, length, offset) if length else b""
        finally:
            os.close(fd)
        return Response(status, tuple(headers), data)
    return Response(status, tuple(headers), _stream_file(HeldFd(fd), offset, length), content_length=length)


class HeldFd:
    """An fd a streamed body owns: closed once, at the body's end or cut, or when a body never started (whose
    `finally` would never run) is dropped."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    __del__ = close


def read_cached(fd: int, size: int, offset: int, buffer: memoryview | None = None) -> bytes | None:
    """Up to `size` bytes at `offset` if the page cache holds them now (preadv2 RWF_NOWAIT: never waits on the
    disk, so the event loop may call it); None when they must be read from the disk (in a worker thread).
    `buffer` (at least `size` bytes, reused by the caller) spares a fresh zeroed buffer per piece."""
    view = memoryview(bytearray(size)) if buffer is None else buffer[:size]
    try:
        count = os.preadv(fd, [view], offset, os.RWF_NOWAIT)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError as err:
        if err.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system without RWF_NOWAIT
            return None
        raise
    if count == 0 and size > 0:
        return None  # nothing cached at offset, or the end: the blocking read tells them apart
    return bytes(view[:count])


async def _stream_file(held: HeldFd, offset: int, length: int) -> AsyncIterator[bytes]:
    try:
        end = offset + length
        buffer = memoryview(bytearray(min(READ_CHUNK, length)))
        while offset < end:
            size = min(READ_CHUNK, end - offset)
            piece = read_cached(held.fd, size, offset, buffer)
            if piece is None:
                piece = await trio.to_thread.run_sync(os.pread, held.fd, size, offset)
            if not piece:
                break
            offset += len(piece)
            yield piece
    finally:
        held.close()
