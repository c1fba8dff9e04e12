"""The trio server loop: keep-alive, body limits, slow and idle clients, streaming, failures."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from doors._http import (
    ClientConnection,
    ClientResponse,
    Limits,
    Request,
    Response,
    Route,
    Router,
    error_response,
    json_response,
    serve_http,
)
from doors._refusal import DoorRefused, Refusal


async def _echo(request: Request) -> Response:
    return json_response({"bytes": len(request.body), "peer": request.peer_role})


async def _stream_count(request: Request) -> Response:
    assert request.body_stream is not None
    total = 0
    while piece := await request.body_stream.receive_some():
        total += len(piece)
    return json_response({"streamed": total})


async def _chunks() -> AsyncIterator[bytes]:
    for piece in (b"ab", b"cd", b"ef"):
        yield piece


async def _stream_out(request: Request) -> Response:
    return Response(200, (("content-type", "application/octet-stream"),), _chunks())


async def _boom(request: Request) -> Response:
    raise RuntimeError("secret-token-123 must not leak")


async def _refuse(request: Request) -> Response:
    raise DoorRefused(Refusal(409, "fs.append_only", "fs", "log is append-only", "append instead"))


async def _refuse_unread(request: Request) -> Response:
    raise DoorRefused(Refusal(409, "fs.changed", "fs", "the version moved", "read it again"))  # the body is not read


ROUTER = Router("fs", [
    Route("POST", "/echo", _echo),
    Route("PUT", "/early", _refuse_unread, stream_body=True),
    Route("PUT", "/stream", _stream_count, stream_body=True, max_body_bytes=100_000),
    Route("GET", "/out", _stream_out),
    Route("GET", "/boom", _boom),
    Route("POST", "/refuse", _refuse),
])
SMALL = Limits(max_body_bytes=1000, idle_timeout_s=5, head_timeout_s=2, body_grace_s=1,
               body_min_bytes_per_s=100)


class Client:
    """The client end of a memory stream pair, speaking raw bytes and reading h11 responses."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.conn = ClientConnection("door")

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def request(self, method: str, target: str, body: bytes = b"") -> ClientResponse:
        await self.send(self.conn.request_bytes(method, target, body))
        return await self.response()

    async def response(self) -> ClientResponse:
        while (response := self.conn.next_response()) is None:
            self.conn.receive_data(await self.stream.receive_some(65536))
        return response

    async def at_eof(self) -> bool:
        try:
            while data := await self.stream.receive_some(65536):
                del data
        except trio.BrokenResourceError:
            pass
        return True


async def _serve_pair(nursery: trio.Nursery, limits: Limits = SMALL) -> Client:
    client_end, server_end = trio.testing.memory_stream_pair()

    async def run() -> None:
        async with server_end:
            await serve_http(server_end, ROUTER, limits, peer_role="app", peer_id="spiffe://x/y")

    nursery.start_soon(run)
    return Client(client_end)


async def test_keep_alive_serves_several_requests_on_one_connection() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        for size in (0, 10, 999):
            response = await client.request("POST", "/echo", b"x" * size)
            assert response.json() == {"bytes": size, "peer": "app"}
            assert not response.will_close
            assert client.conn.next_cycle()
        await client.stream.aclose()


async def test_declared_body_over_the_limit_is_413_and_closes() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        await client.send(b"POST /echo HTTP/1.1\r\nHost: d\r\nContent-Length: 5000\r\n\r\n")
        response = await client.response()
        assert (response.status, response.json()["error"]) == (413, "http.max_body_bytes")
        assert response.will_close
        await client.stream.aclose()


async def test_chunked_body_over_the_limit_is_413() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        chunk = b"400\r\n" + b"y" * 1024 + b"\r\n"
        await client.send(b"POST /echo HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk)
        response = await client.response()
        assert response.status == 413
        await client.stream.aclose()


async def test_malformed_request_is_400_then_closed(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        await client.send(b"NOT HTTP AT ALL\r\n\r\n")
        response = await client.response()
        assert response.status == 400
        assert json.loads(response.body)["who"] == "fs"
        assert await client.at_eof()


async def test_a_target_urlsplit_cannot_read_is_a_400_not_a_crash_of_the_door(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Before, urlsplit's ValueError ("Invalid IPv6 URL") left serve_http and took the door's nursery down.
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        await client.send(b"GET //[x HTTP/1.1\r\nHost: door\r\n\r\n")
        response = await client.response()
        assert (response.status, json.loads(response.body)["error"]) == (400, "http.target")
        assert await client.at_eof()


async def test_slow_body_is_cut_with_408(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        await client.send(b"POST /echo HTTP/1.1\r\nHost: d\r\nContent-Length: 900\r\n\r\n")
        for _ in range(3):
            await client.send(b"z" * 10)
            await trio.sleep(0.5)  # 20 bytes/s: under the 100 bytes/s floor once the 1 s grace is spent
        response = await client.response()
        assert (response.status, response.json()["error"]) == (408, "http.body_min_bytes_per_s")
        await client.stream.aclose()


async def test_slow_head_is_cut_with_408(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        for piece in (b"GET /out HTTP/1.1\r\n", b"Ho", b"st: d\r\n"):
            await client.send(piece)
            await trio.sleep(0.6)  # each piece in time, the whole head not: cut 2 s after its first byte
        response = await client.response()
        assert (response.status, response.json()["error"]) == (408, "http.head_timeout_s")
        await client.stream.aclose()


async def test_head_timeout_counts_from_the_first_byte_not_the_idle_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A partial head that then stalls is cut after head_timeout_s, not held for the longer idle_timeout_s."""
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        await client.send(b"GET /out HTTP/1.1\r\nHost: d\r\nx-slow: ")
        started = trio.current_time()
        response = await client.response()
        assert (response.status, response.json()["error"]) == (408, "http.head_timeout_s")
        assert trio.current_time() - started == SMALL.head_timeout_s  # virtual clock: exact
        await client.stream.aclose()


async def test_idle_connection_is_closed_quietly(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        started = trio.current_time()
        assert await client.at_eof()
        assert trio.current_time() - started >= SMALL.idle_timeout_s


async def test_streaming_request_body_is_read_in_pieces() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        response = await client.request("PUT", "/stream", b"s" * 50_000)
        assert response.json() == {"streamed": 50_000}
        await client.stream.aclose()


async def test_streaming_response_is_chunked() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        response = await client.request("GET", "/out")
        assert response.body == b"abcdef"
        assert response.header("transfer-encoding") == "chunked"
        await client.stream.aclose()


async def test_handler_crash_is_500_without_the_exception_text() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        response = await client.request("GET", "/boom")
        assert response.status == 500
        assert b"secret-token" not in response.body
        await client.stream.aclose()


async def test_door_refusal_keeps_the_connection() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        response = await client.request("POST", "/refuse")
        assert response.json()["error"] == "fs.append_only"
        assert client.conn.next_cycle()
        assert (await client.request("GET", "/nope")).status == 404
        assert client.conn.next_cycle()
        assert (await client.request("POST", "/echo", b"1")).status == 200
        await client.stream.aclose()


@given(st.binary(max_size=2048))
@settings(max_examples=100, deadline=None)
def test_any_bytes_end_in_a_response_or_a_close_never_a_crash(data: bytes) -> None:
    async def main() -> None:
        client_end, server_end = trio.testing.memory_stream_pair()

        async def serve() -> None:
            async with server_end:
                await serve_http(server_end, ROUTER, SMALL)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            await client_end.send_all(data)
            await client_end.send_eof()
            with trio.fail_after(30):
                while await client_end.receive_some(65536):
                    pass

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_an_answer_sent_before_the_body_was_read_says_connection_close() -> None:
    # The refusal itself does not ask to close; the loop must, or a client reusing the connection would
    # have its next request read as the rest of this body (it saw ConnectionClosed instead of an answer).
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        await client.send(b"PUT /early HTTP/1.1\r\nHost: d\r\nContent-Length: 500\r\n\r\n" + b"b" * 100)
        response = await client.response()
        assert (response.status, response.json()["error"]) == (409, "fs.changed")
        assert response.header("connection") == "close"
        await client.stream.aclose()


async def test_a_gate_refusal_before_the_body_says_connection_close() -> None:
    client_end, server_end = trio.testing.memory_stream_pair()

    def gate(request: Request) -> Response:
        return error_response(Refusal(403, "edges", "fs", "edge app->fs is not listed", "add it"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(functools.partial(serve_http, server_end, ROUTER, SMALL, gate=gate))
        client = Client(client_end)
        await client.send(b"POST /echo HTTP/1.1\r\nHost: d\r\nContent-Length: 900\r\n\r\n")
        response = await client.response()
        assert response.status == 403
        assert response.header("connection") == "close"
        await client_end.aclose()


async def test_an_answer_after_the_whole_body_keeps_the_connection() -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve_pair(nursery)
        response = await client.request("POST", "/refuse", b"b" * 100)  # read, then refused
        assert response.status == 409 and response.header("connection") is None
        assert client.conn.next_cycle()
        await client.stream.aclose()
