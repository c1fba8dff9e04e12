"""`Expect: 100-continue` and request framing (Content-Length vs Transfer-Encoding), sans-IO and in the loop."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from doors._http import ClientConnection, Limits, Request, Response, Route, Router, json_response, serve_http
from doors._http._server_conn import BodyData, Head, Malformed, ServerConnection

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
EXPECT_HEAD = b"PUT /put HTTP/1.1\r\nHost: d\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"


def _conn(data: bytes) -> tuple[ServerConnection, object]:
    conn = ServerConnection(Limits(), "fs")
    conn.receive_data(data)
    return conn, conn.next_event()


def _refusal(event: object) -> tuple[int, str, str]:
    assert isinstance(event, Malformed), event
    assert isinstance(event.response.body, bytes)
    assert event.response.close
    shape = json.loads(event.response.body)
    return event.response.status, shape["error"], shape["detail"]


def test_a_client_expecting_100_continue_gets_it_once() -> None:
    conn, event = _conn(EXPECT_HEAD)
    assert isinstance(event, Head)
    assert conn.continue_bytes() == CONTINUE
    assert conn.continue_bytes() == b""


def test_no_interim_response_without_expect() -> None:
    conn, event = _conn(b"PUT /put HTTP/1.1\r\nHost: d\r\nContent-Length: 5\r\n\r\n")
    assert isinstance(event, Head)
    assert conn.continue_bytes() == b""


def test_no_interim_response_once_the_body_started_anyway() -> None:
    conn, event = _conn(EXPECT_HEAD + b"hello")
    assert isinstance(event, Head)
    assert isinstance(conn.next_event(), BodyData)
    assert conn.continue_bytes() == b""


@pytest.mark.parametrize("headers", [
    b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
    b"transfer-encoding: chunked\r\ncontent-length: 5\r\n",
    b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n",
])
def test_content_length_with_transfer_encoding_is_refused(headers: bytes) -> None:
    _, event = _conn(b"POST /echo HTTP/1.1\r\nHost: d\r\n" + headers + b"\r\n5\r\nhello\r\n0\r\n\r\n")
    status, error, detail = _refusal(event)
    assert (status, error) == (400, "http.framing")
    assert "Content-Length and Transfer-Encoding" in detail


@pytest.mark.parametrize("lengths", [b"Content-Length: 5\r\nContent-Length: 6\r\n", b"Content-Length: 5, 6\r\n"])
def test_conflicting_content_lengths_are_refused(lengths: bytes) -> None:
    # h11 refuses these itself; pinned here so an h11 upgrade that lets them through is noticed.
    _, event = _conn(b"POST /echo HTTP/1.1\r\nHost: d\r\n" + lengths + b"\r\nhello!")
    status, error, detail = _refusal(event)
    assert (status, error) == (400, "http.malformed")
    assert "Content-Length" in detail


def test_repeated_equal_content_lengths_are_one_length() -> None:
    _, event = _conn(b"POST /echo HTTP/1.1\r\nHost: d\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello")
    assert isinstance(event, Head) and event.content_length == 5


# -- in the trio loop --

async def _put(request: Request) -> Response:
    return json_response({"bytes": len(request.body)})


ROUTER = Router("fs", [Route("PUT", "/put", _put, max_body_bytes=100)])
LIMITS = Limits(idle_timeout_s=5, head_timeout_s=2, body_grace_s=1, body_min_bytes_per_s=100)


async def _serve(nursery: trio.Nursery) -> trio.abc.Stream:
    client_end, server_end = trio.testing.memory_stream_pair()

    async def run() -> None:
        async with server_end:
            await serve_http(server_end, ROUTER, LIMITS)

    nursery.start_soon(run)
    return client_end


async def _read_exactly(stream: trio.abc.Stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        piece = await stream.receive_some(size - len(data))
        assert piece, f"the door closed after {data!r}"
        data += piece
    return data


async def _response(stream: trio.abc.Stream, conn: ClientConnection) -> tuple[int, dict[str, object], bool]:
    while (response := conn.next_response()) is None:
        conn.receive_data(await stream.receive_some(65536))
    return response.status, response.json(), response.header("connection") == "close"


async def test_the_door_sends_100_continue_before_reading_the_body(
        autojump_clock: trio.testing.MockClock) -> None:
    # Without the interim answer the door waits for the body until its rate floor, then says 408.
    async with trio.open_nursery() as nursery:
        client = await _serve(nursery)
        await client.send_all(EXPECT_HEAD)
        assert await _read_exactly(client, len(CONTINUE)) == CONTINUE
        await client.send_all(b"hello")
        conn = ClientConnection("fs")
        conn.request_bytes("PUT", "/put", b"hello")  # the client side's state, for parsing the answer
        assert await _response(client, conn) == (200, {"bytes": 5}, False)
        await client.aclose()


async def test_a_body_refused_from_its_head_gets_no_100_and_closes(
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve(nursery)
        await client.send_all(EXPECT_HEAD.replace(b"Content-Length: 5", b"Content-Length: 500"))
        conn = ClientConnection("fs")
        conn.request_bytes("PUT", "/put", b"x" * 500)
        status, shape, closes = await _response(client, conn)
        assert (status, shape["error"], closes) == (413, "http.max_body_bytes", True)
        await client.aclose()


async def test_both_lengths_in_the_loop_are_400_then_closed(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        client = await _serve(nursery)
        await client.send_all(b"PUT /put HTTP/1.1\r\nHost: d\r\nContent-Length: 3\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        answer = b""
        while piece := await client.receive_some(65536):  # the door closes after its answer
            answer += piece
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 ") and b"connection: close" in head.lower()
        assert json.loads(body)["error"] == "http.framing"
