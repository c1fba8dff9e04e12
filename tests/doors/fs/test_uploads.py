"""Bodies in flight count: each piece is reserved against max_total_bytes as it arrives (given back when the
body is refused or aborted), and one client has at most max_concurrent_uploads bodies in flight."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import trio
import trio.testing

from doors._http import ClientConnection, ClientResponse, Router, serve_http
from doors.fs._decide import decide_arriving, decide_upload_slot
from doors.fs._rules import FsRows, Usage
from tests.doors.fs.conftest import LIMITS, Door

KIB = 1024


async def settle() -> None:
    """Until the door has done all it will do with what it got: every task blocked, no worker thread busy
    (wait_all_tasks_blocked alone counts a task waiting on its thread as blocked)."""
    while True:
        await trio.testing.wait_all_tasks_blocked()
        if trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0:
            return
        await trio.sleep(0.001)  # a worker thread is still on its file operation: let it finish


class Upload:
    """One client connection sending a PUT whose body it may leave unfinished; a task reads the answer."""

    def __init__(self, door: Door, path: str, declared: int | None) -> None:
        """`declared` None: a chunked body, whose size the door learns only as it arrives."""
        self.client, self.server = trio.testing.memory_stream_pair()
        self.http = ClientConnection("fs")
        self.http.request_bytes("PUT", "/", b"", ())  # the client side's state: a request was sent
        self.door = door
        self.chunked = declared is None
        framing = "transfer-encoding: chunked" if declared is None else f"content-length: {declared}"
        self.head = f"PUT /v0/fs/files/{path} HTTP/1.1\r\nhost: fs\r\n{framing}\r\n\r\n".encode()
        self.answer: ClientResponse | None = None

    def _framed(self, data: bytes) -> bytes:
        return b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data

    async def _read(self) -> None:
        try:
            while self.answer is None and (data := await self.client.receive_some(65536)):
                self.http.receive_data(data)
                self.answer = self.http.next_response()
        except trio.ClosedResourceError:
            return  # aborted by the test

    async def start(self, nursery: trio.Nursery, first: bytes) -> None:
        router = Router("fs", self.door.api.routes())
        nursery.start_soon(lambda: serve_http(self.server, router, LIMITS, peer_role=self.door.role))
        nursery.start_soon(self._read)
        await self.send(first, head=self.head)

    async def send(self, more: bytes, head: bytes = b"") -> None:
        await self.client.send_all(head + self._framed(more))
        await settle()

    async def response(self) -> ClientResponse:
        await settle()
        assert self.answer is not None, "no answer: the door still waits for the rest of the body"
        return self.answer

    async def abort(self) -> None:
        await self.client.aclose()
        await settle()


def _error(response: ClientResponse) -> tuple[int, str]:
    return response.status, json.loads(response.body)["error"]


def _temp_bytes(root: str) -> int:
    """What the door's unfinished writes hold in the workspace (its temporary files)."""
    return sum(os.path.getsize(os.path.join(root, name)) for name in os.listdir(root) if name.startswith(".sh-fs-"))


@pytest.mark.parametrize(("open_uploads", "allowed"), [(0, True), (2, True), (3, False), (9, False)])
def test_the_upload_slot_rule(open_uploads: int, allowed: bool) -> None:
    decision = decide_upload_slot(FsRows(max_concurrent_uploads=3), open_uploads, "app")
    assert (decision is None) is allowed
    if decision is not None:
        assert (decision.status, decision.row) == (429, "max_concurrent_uploads") and "app" in decision.detail


@pytest.mark.parametrize(("used", "more", "allowed"), [(0, 100, True), (60, 40, True), (60, 41, False),
                                                        (100, 1, False), (0, 101, False)])
def test_arriving_bytes_count_against_the_session_quota(used: int, more: int, allowed: bool) -> None:
    decision = decide_arriving(FsRows(max_total_bytes=100), Usage(bytes_written=used), 7, more)
    assert (decision is None) is allowed
    if decision is not None:
        assert (decision.status, decision.row) == (507, "max_total_bytes")
        assert f"reached {7 + more} bytes" in decision.detail


async def test_a_client_gets_at_most_max_concurrent_uploads_bodies_in_flight(door_factory: Any) -> None:
    door = door_factory({"max_concurrent_uploads": 3, "max_file_bytes": 1 << 20})
    meter = door.api.dispatch.meter
    async with trio.open_nursery() as nursery:
        stalled = [Upload(door, f"s{i}", 1 << 20) for i in range(3)]
        for upload in stalled:
            await upload.start(nursery, b"x" * 100 * KIB)
        assert meter.uploads("app") == 3
        fourth = Upload(door, "fourth", 1 << 20)
        await fourth.start(nursery, b"x" * KIB)
        assert _error(await fourth.response()) == (429, "max_concurrent_uploads")
        small = await door.request("PUT", "/v0/fs/files/small", b"tiny")  # small bodies are uploads too
        assert _error(small) == (429, "max_concurrent_uploads")
        assert (await door.request("GET", "/v0/fs/list")).status == 200  # what has no body is not held back
        await stalled[0].abort()
        assert meter.uploads("app") == 2
        assert (await door.request("PUT", "/v0/fs/files/small", b"tiny")).status == 201
        for upload in stalled[1:]:
            await upload.abort()
    assert meter.uploads("app") == 0 and meter.usage.bytes_written == 4
    refusals = [e for e in door.events if e["row"] == "max_concurrent_uploads"]
    assert [(e["path"], e["status"]) for e in refusals] == [("fourth", 429), ("small", 429)]


async def test_bytes_in_flight_count_against_the_quota_and_are_given_back(door_factory: Any) -> None:
    """Three bodies of 400 KiB in flight against a 1 MiB quota (two chunked: no declared size to refuse
    early): the third is refused as its bytes arrive, the workspace never holds more than the quota, and
    aborting gives every reserved byte back."""
    quota = 1 << 20
    door = door_factory({"max_total_bytes": quota, "max_file_bytes": 512 * KIB})
    meter = door.api.dispatch.meter
    async with trio.open_nursery() as nursery:
        uploads = [Upload(door, "u0", 512 * KIB), Upload(door, "u1", None), Upload(door, "u2", None)]
        for upload in uploads[:2]:
            await upload.start(nursery, b"x" * 400 * KIB)
        assert meter.usage.bytes_written == 800 * KIB
        await uploads[2].start(nursery, b"x" * 400 * KIB)
        refused = await uploads[2].response()
        assert _error(refused) == (507, "max_total_bytes")
        assert "bodies still arriving count" in json.loads(refused.body)["detail"]
        assert meter.usage.bytes_written == 800 * KIB  # the refused body's reservation went back at once
        assert _temp_bytes(door.root) <= quota
        declared = await door.request("PUT", "/v0/fs/files/declared", b"x" * 300 * KIB)
        assert _error(declared) == (507, "max_total_bytes")  # a declared length sees the bytes in flight too
        for upload in uploads[:2]:
            await upload.abort()
    assert meter.usage.bytes_written == 0 and meter.uploads("app") == 0 and _temp_bytes(door.root) == 0
    for name in ("a", "b"):
        assert (await door.request("PUT", f"/v0/fs/files/{name}", b"y" * 512 * KIB)).status == 201
    assert meter.usage.bytes_written == quota  # a committed body counts once, not twice


async def test_a_body_finished_after_others_were_refused_lands_whole(door_factory: Any) -> None:
    door = door_factory({"max_total_bytes": 600 * KIB, "max_file_bytes": 512 * KIB})
    async with trio.open_nursery() as nursery:
        first = Upload(door, "first", 300 * KIB)
        await first.start(nursery, b"a" * 200 * KIB)
        second = Upload(door, "second", None)
        await second.start(nursery, b"b" * 450 * KIB)
        assert _error(await second.response()) == (507, "max_total_bytes")
        await first.send(b"a" * 100 * KIB)
        assert (await first.response()).status == 201
        await first.abort()
    with open(os.path.join(door.root, "first"), "rb") as landed:
        assert landed.read() == b"a" * 300 * KIB
    assert not os.path.exists(os.path.join(door.root, "second"))
    assert door.api.dispatch.meter.usage.bytes_written == 300 * KIB


async def test_a_refused_body_keeps_no_reservation(door_factory: Any) -> None:
    door = door_factory({"max_total_bytes": 1 << 20})
    key = b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + b"k" * 200 * KIB
    assert _error(await door.request("PUT", "/v0/fs/files/key", key)) == (403, "refuse_secrets")
    meter = door.api.dispatch.meter
    assert meter.usage.bytes_written == 0 and meter.uploads("app") == 0
