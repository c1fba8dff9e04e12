"""The send side of the server loop: responses go out in bounded pieces, a client that stops reading is cut
(and said so through on_cut), and a streamed body's producer is closed when that happens."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import trio
import trio.testing

from doors._http import ClientConnection, Limits, Request, Response, Route, Router, serve_http

BIG = b"x" * (1024 * 1024)
PIECE = 16 * 1024
LIMITS = Limits(idle_timeout_s=5, head_timeout_s=2, send_timeout_s=3, send_piece_bytes=PIECE)
closed: list[str] = []


async def _big(request: Request) -> Response:
    return Response(200, (("content-type", "application/octet-stream"),), BIG)


async def _produced() -> AsyncIterator[bytes]:
    try:
        for _ in range(64):
            yield b"y" * (256 * 1024)  # a producer's pieces larger than the send piece
    finally:
        closed.append("producer")


async def _streamed(request: Request) -> Response:
    return Response(200, (), _produced())


kept: list[bytes] = []


async def _kept() -> AsyncIterator[bytes]:
    for _ in range(4):
        kept.append(os.urandom(64 * 1024))
        yield kept[-1]


async def _streamed_kept(request: Request) -> Response:
    return Response(200, (), _kept())


ROUTER = Router("fs", [Route("GET", "/big", _big), Route("GET", "/streamed", _streamed),
                       Route("GET", "/kept", _streamed_kept)])


class Recording(trio.abc.Stream):
    """The server's end: records the size of every send_all (what one write may hold unsent)."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.sends: list[int] = []
        self.sent: list[bytes | bytearray | memoryview] = []

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sends.append(len(data))
        self.sent.append(data)
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _serve(target: str, read: bool) -> tuple[Recording, list[tuple[str, int]], int]:
    """Serve one GET on a lockstep pair (a send completes only as the client reads); read it all or none."""
    client_end, server_end = trio.testing.lockstep_stream_pair()
    recording, cuts = Recording(server_end), list[tuple[str, int]]()
    received = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: serve_http(recording, ROUTER, LIMITS,
                                              on_cut=lambda request, sent: cuts.append((request.path, sent))))
        await client_end.send_all(ClientConnection("fs").request_bytes("GET", target, b""))
        if read:
            conn = ClientConnection("fs")
            while (response := conn.next_response()) is None:
                conn.receive_data(await client_end.receive_some(65536))
            received = len(response.body)
            await client_end.aclose()  # the server's next wait for a request ends at once
    return recording, cuts, received


async def test_a_large_body_goes_out_in_pieces_none_larger_than_the_limit() -> None:
    recording, cuts, received = await _serve("/big", read=True)
    assert received == len(BIG) and cuts == []
    assert max(recording.sends) <= PIECE  # a piece, never the whole body


async def test_a_client_that_stops_reading_is_cut_and_reported(autojump_clock: trio.testing.MockClock) -> None:
    recording, cuts, _ = await _serve("/big", read=False)
    assert len(cuts) == 1 and cuts[0][0] == "/big"
    assert cuts[0][1] < len(BIG)  # cut before the body went out
    assert max(recording.sends) <= PIECE


async def test_a_cut_closes_the_streamed_bodys_producer(autojump_clock: trio.testing.MockClock) -> None:
    closed.clear()
    recording, cuts, _ = await _serve("/streamed", read=False)
    assert [path for path, _ in cuts] == ["/streamed"] and closed == ["producer"]
    assert max(recording.sends) <= PIECE


async def test_a_streamed_body_read_whole_closes_its_producer_too() -> None:
    closed.clear()
    _, cuts, received = await _serve("/streamed", read=True)
    assert received == 64 * 256 * 1024 and cuts == [] and closed == ["producer"]


async def test_a_streamed_bodys_large_pieces_are_sent_from_themselves_not_copied() -> None:
    kept.clear()
    recording, cuts, received = await _serve("/kept", read=True)
    assert received == 4 * 64 * 1024 and cuts == []
    views = [data for data in recording.sent if isinstance(data, memoryview)]
    # each produced piece past its first record goes out as views of the very object the producer made
    assert {id(view.obj) for view in views} == {id(piece) for piece in kept}
    assert max(recording.sends) <= PIECE
    assert b"".join(bytes(data) for data in recording.sent).count(kept[2]) == 1  # order and bytes intact
