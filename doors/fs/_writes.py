"""Handlers that change the workspace: write (atomic), append, mkdir, delete, rename.

Each resolves the parent directory beneath the root first, receives the body (scanning it for keys and
counting it against the rows) into a temporary file beside the target or a spool, and then, in one worker
call holding the per-path lock, gathers the last facts and hands the call to `Dispatcher.conclude`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

import trio

from doors._http import Request, Response, json_of
from doors._refusal import DoorRefused, Refusal
from doors.fs._batches import RECEIVE_BATCH, BatchKeeper
from doors.fs._decide import DIR_MODE, file_mode, precheck_size
from doors.fs._dispatch import Call, Upload
from doors.fs._ops import Located, kernel_refusal, target_of
from doors.fs._paths import parse_path
from doors.fs._prelude import Answered, FsHandlers, json_ok, query_value
from doors.fs._request import parse_flag, parse_length
from doors.fs._rules import Facts, Op, Target, refuse
from doors.fs._secrets import CARRY, SecretScanner, scan
from doors.fs._spool import SPOOL_MEMORY, Spool

SMALL_BODY = 64 * 1024  # bodies up to this size are received whole, then handled in one worker call
assert SMALL_BODY <= SPOOL_MEMORY


@dataclass(frozen=True)
class Received:
    """What the body held: its size (up to the limit + 1), a key marker if one was seen, and the upload that
    reserved its bytes as they arrived."""

    count: int
    secret: str | None
    upload: Upload | None = None
    tail: bytes = b""  # its last bytes: what the next write, to any file, is scanned after


class WriteHandlers(FsHandlers):
    """write, append, mkdir, delete, rename."""

    def _precheck(self, call: Call, request: Request) -> bool:
        """Refuse a declared size the rows refuse; True when the body is small enough to take whole."""
        declared = parse_length(request.header("content-length"))
        refusal = precheck_size(call.op, self.rows, self.dispatch.meter.usage, declared)
        if refusal is not None:
            raise Answered(self.dispatch.refused(call, refusal, byte_count=declared or 0))
        return declared is not None and declared <= SMALL_BODY

    @contextlib.contextmanager
    def _upload(self, call: Call) -> Iterator[Upload]:
        """A slot for this body among its client's uploads in flight (429 when they are all taken)."""
        upload = self.dispatch.meter.open_upload(self.rows, call.role)
        if isinstance(upload, Refusal):
            raise Answered(self.dispatch.refused(call, upload))
        try:
            yield upload
        finally:
            upload.close()  # refused, aborted or committed: the slot and any bytes still held go back

    def _facts(self, request: Request, target: Target, located: Located, received: Received) -> Facts:
        return Facts(
            target=target,
            real_path=located.real,
            body_bytes=received.count,
            secret=received.secret,
            if_match=request.header("if-match"),
            if_none_match=request.header("if-none-match"),
        )

    async def _receive(self, request: Request, call: Call, sink: Any, upload: Upload) -> Received:
        """Read the body into `sink`; a broken or too slow body is refused (and audited) like the rest."""
        try:
            return await self._receive_body(request, call, sink, upload)
        except DoorRefused as refused:  # the HTTP layer's body limits: audited as the door's refusal
            refusal = replace(refused.refusal, detail=str(refused.refusal.detail), who="door")
            raise Answered(self.dispatch.refused(call, refusal, byte_count=upload.held)) from None

    async def _receive_body(self, request: Request, call: Call, sink: Any, upload: Upload) -> Received:
        """Read the body into `sink` until its end, a key marker or kept secret, or one byte past max_file_bytes;
        each piece is counted against max_total_bytes as it arrives (refused at once when it does not fit), and
        scanned and kept RECEIVE_BATCH bytes at a time. A kept secret is looked for after the tail of the door's
        last write, so one split across two files is found too."""
        scanner = None
        if self.rows.refuse_secrets:
            scanner = SecretScanner(self.dispatch.recent.tail, self.rows.kept_secrets)
        declared = parse_length(request.header("content-length"))
        keeper = BatchKeeper(scanner, sink, RECEIVE_BATCH if declared is None else min(RECEIVE_BATCH, declared))
        count = 0
        stream = request.body_stream
        pending = [request.body] if stream is None else []
        while True:
            piece = pending.pop() if pending else (await stream.receive_some() if stream is not None else b"")
            if not piece:
                break
            refusal = upload.take(len(piece))
            if refusal is not None:
                raise Answered(self.dispatch.refused(call, refusal, byte_count=count + len(piece)))
            count += len(piece)
            if keeper.add(piece) or count > self.rows.max_file_bytes:
                break
        keeper.finish()
        finding = scanner.finding if scanner is not None else None
        return Received(count, finding.kind if finding is not None else None, upload, keeper.tail)

    # -- write --
    async def write(self, request: Request) -> Response:
        return await self.run(lambda: self._write(request))

    async def _write(self, request: Request) -> Response:
        want_exec = parse_flag(query_value(request, "exec"))
        if want_exec is None:
            raise Answered(
                self.dispatch.refused(
                    None,
                    refuse(400, "exec", "exec must be 0 or 1", "send exec=1"),
                    raw_path=request.rest,
                    op="write",
                    role=request.peer_role or "app",
                )
            )
        call = self.begin(request, Op.WRITE, request.rest, want_exec=want_exec)
        small = self._precheck(call, request)
        with self._upload(call) as upload:
            if small:
                whole = bytearray()  # a small body: received first, then everything in one worker call
                received = await self._receive(request, call, whole.extend, upload)
                return await trio.to_thread.run_sync(self._write_whole, request, call, bytes(whole), received)
            return await self._write_streamed(request, call, upload)
        raise AssertionError("unreachable")

    async def _write_streamed(self, request: Request, call: Call, upload: Upload) -> Response:
        located = await self.locate_parent(call)
        with ExitStack() as stack:
            stack.callback(os.close, located.parent_fd)
            # Creating a file can wait on the file system's journal: never in the event loop.
            temp_fd, temp_name = await trio.to_thread.run_sync(self._create_temp, call, located)
            stack.callback(self.workspace.discard_temp, located.parent_fd, temp_name)
            stack.callback(os.close, temp_fd)
            received = await self._receive(request, call, lambda chunk: self.workspace.write_all(temp_fd, chunk),
                                           upload)
            return await trio.to_thread.run_sync(
                self._commit_write, request, call, located, temp_fd, temp_name, received
            )
        raise AssertionError("unreachable")

    def _write_whole(self, request: Request, call: Call, whole: bytes, received: Received) -> Response:
        located = self.locate_parent_sync(call)
        with ExitStack() as stack:
            stack.callback(os.close, located.parent_fd)
            temp_fd, temp_name = self._create_temp(call, located)
            stack.callback(self.workspace.discard_temp, located.parent_fd, temp_name)
            stack.callback(os.close, temp_fd)
            self.workspace.write_all(temp_fd, whole)
            return self._commit_write(request, call, located, temp_fd, temp_name, received)
        raise AssertionError("unreachable")

    def _create_temp(self, call: Call, located: Located) -> tuple[int, str]:
        try:
            return self.workspace.create_temp(located.parent_fd)
        except DoorRefused as refused:
            raise Answered(self.dispatch.refused(call, refused.refusal)) from None
        except OSError as err:
            raise Answered(self.dispatch.refused(call, kernel_refusal(err, call.path))) from None

    def _commit_write(
        self, request: Request, call: Call, located: Located, temp_fd: int, temp_name: str, received: Received
    ) -> Response:
        assert located.real is not None
        with self.workspace.lock(located.real):
            target = self.workspace.stat_at(located.parent_fd, located.name)
            facts = self._facts(request, target, located, received)
            mode = file_mode(located.real, self.rows, call.want_exec, target.executable)

            def act() -> Response:
                written = self.workspace.commit_write(located.parent_fd, temp_fd, temp_name, located.name, mode)
                self.dispatch.recent.add(received.tail)
                return _written(call, written, created=not target.exists)

            return self.dispatch.conclude(call, facts, act, received.upload)

    # -- append --
    async def append(self, request: Request) -> Response:
        return await self.run(lambda: self._append(request))

    async def _append(self, request: Request) -> Response:
        call = self.begin(request, Op.APPEND, request.rest)
        small = self._precheck(call, request)
        with self._upload(call) as upload:
            if small:
                spool = Spool(-1)  # a small body stays in memory: no directory needed
                received = await self._receive(request, call, spool.add, upload)
                return await trio.to_thread.run_sync(self._append_whole, request, call, spool, received)
            located = await self.locate_parent(call)
            with ExitStack() as stack:
                stack.callback(os.close, located.parent_fd)
                spool = Spool(located.parent_fd)
                stack.callback(spool.close)
                received = await self._receive(request, call, spool.add, upload)
                return await trio.to_thread.run_sync(self._commit_append, request, call, located, spool, received)
        raise AssertionError("unreachable")

    def _append_whole(self, request: Request, call: Call, spool: Spool, received: Received) -> Response:
        located = self.locate_parent_sync(call)
        try:
            return self._commit_append(request, call, located, spool, received)
        finally:
            os.close(located.parent_fd)
            spool.close()

    def _commit_append(
        self, request: Request, call: Call, located: Located, spool: Spool, received: Received
    ) -> Response:
        assert located.real is not None
        with self.workspace.lock(located.real), ExitStack() as stack:
            target = self.workspace.stat_at(located.parent_fd, located.name)
            fd = -1
            if target.kind == "file":
                fd = self.workspace.open_append(located.parent_fd, located.name, create=False)
                stack.callback(os.close, fd)
                target = target_of(os.fstat(fd))
                if received.secret is None and self.rows.refuse_secrets:
                    # The file's own tail is the carry-over: a marker or kept secret split across two appends is found.
                    found = scan(spool.head, self.workspace.tail(fd, target.size, CARRY), self.rows.kept_secrets)
                    received = replace(received, secret=found.kind if found else None)
            facts = self._facts(request, target, located, received)

            def act() -> Response:
                out = fd
                if out < 0:
                    out = self.workspace.open_append(located.parent_fd, located.name, create=True)
                    stack.callback(os.close, out)
                for piece in spool.pieces():
                    self.workspace.write_all(out, piece)
                self.dispatch.recent.add(received.tail)
                return _written(call, target_of(os.fstat(out)), created=not target.exists)

            return self.dispatch.conclude(call, facts, act, received.upload)

    # -- mkdir, delete --
    async def mkdir(self, request: Request) -> Response:
        return await self.run(lambda: self._simple(request, Op.MKDIR))

    async def delete(self, request: Request) -> Response:
        return await self.run(lambda: self._simple(request, Op.DELETE))

    async def _simple(self, request: Request, op: Op) -> Response:
        call = self.begin(request, op, request.rest)
        located = await self.locate_parent(call)
        try:
            return await trio.to_thread.run_sync(self._commit_simple, request, call, located)
        finally:
            os.close(located.parent_fd)

    def _commit_simple(self, request: Request, call: Call, located: Located) -> Response:
        assert located.real is not None
        with self.workspace.lock(located.real):
            target = self.workspace.stat_at(located.parent_fd, located.name)
            facts = self._facts(request, target, located, Received(0, None))

            def act() -> Response:
                if call.op is Op.DELETE:
                    self.workspace.delete(located.parent_fd, located.name, is_dir=target.kind == "dir")
                    return json_ok({"path": call.path.text, "deleted": True})
                if target.exists:
                    return json_ok({"path": call.path.text, "created": False})
                self.workspace.mkdir(located.parent_fd, located.name, DIR_MODE)
                return json_ok({"path": call.path.text, "created": True}, 201)

            return self.dispatch.conclude(call, facts, act)

    # -- rename --
    async def rename(self, request: Request) -> Response:
        return await self.run(lambda: self._rename(request))

    async def _rename(self, request: Request) -> Response:
        call = self._rename_call(request)
        source = await self.locate_parent(call)
        with ExitStack() as stack:
            stack.callback(os.close, source.parent_fd)
            dest = await self.locate_parent(call, as_dest=True)
            stack.callback(os.close, dest.parent_fd)
            return await trio.to_thread.run_sync(self._commit_rename, request, call, source, dest)
        raise AssertionError("unreachable")

    def _rename_call(self, request: Request) -> Call:
        role = request.peer_role or "app"
        paths = _rename_paths(request.body)
        if isinstance(paths, str):
            refusal = refuse(400, "request", paths, 'send {"from": "a/b", "to": "a/c"}')
            raise Answered(self.dispatch.refused(None, refusal, op="rename", role=role))
        parsed = [parse_path(text) for text in paths]
        for text, path in zip(paths, parsed, strict=True):
            if isinstance(path, Refusal):
                raise Answered(self.dispatch.refused(None, path, raw_path=text, op="rename", role=role))
        source, dest = parsed
        assert not isinstance(source, Refusal) and not isinstance(dest, Refusal)
        return self.judge_names(Call(Op.RENAME, source, role, dest=dest))

    def _commit_rename(self, request: Request, call: Call, source: Located, dest: Located) -> Response:
        assert source.real is not None and dest.real is not None
        first, second = sorted((source.real, dest.real))
        with self.workspace.lock(first), ExitStack() as stack:
            if second != first:
                stack.enter_context(self.workspace.lock(second))
            target = self.workspace.stat_at(source.parent_fd, source.name)
            facts = replace(
                self._facts(request, target, source, Received(0, None)),
                dest_target=self.workspace.stat_at(dest.parent_fd, dest.name),
            )

            def act() -> Response:
                self.workspace.rename(source, dest)
                return json_ok({"from": call.path.text, "to": call.dest.text if call.dest else ""})

            return self.dispatch.conclude(call, facts, act)


def _rename_paths(body: bytes) -> tuple[str, str] | str:
    try:
        value = json_of(body)
    except ValueError as exc:
        return f"the body is not JSON: {exc}"
    if not isinstance(value, dict) or set(value) - {"from", "to"}:
        return 'the body must be {"from": PATH, "to": PATH}'
    source, dest = value.get("from"), value.get("to")
    if not isinstance(source, str) or not isinstance(dest, str):
        return '"from" and "to" must be strings'
    return source, dest


def _written(call: Call, written: Target, *, created: bool) -> Response:
    body = {"path": call.path.text, "size": written.size, "etag": written.etag, "created": created}
    return json_ok(body, 201 if created else 200, (("etag", written.etag or ""),))
