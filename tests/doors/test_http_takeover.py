"""Takeover routes: a CONNECT (or absolute-form) request hands the connection, bytes replayed, to a handler."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from doors._http import (
    Limits,
    ReplayStream,
    Request,
    Response,
    Route,
    Router,
    ServerConnection,
    TakeoverRoute,
    json_response,
    serve_http,
)
from doors._http._server_conn import Head, Malformed

CONNECT = b"CONNECT ok.example:443 HTTP/1.1\r\nHost: ok.example:443\r\n\r\n"


def _head(conn: ServerConnection, data: bytes) -> Head:
    conn.receive_data(data)
    event = conn.next_event()
    assert isinstance(event, Head), event
    return event


def test_without_takeover_a_connect_target_is_400() -> None:
    conn = ServerConnection(Limits(), "net")
    conn.receive_data(CONNECT)
    event = conn.next_event()
    assert isinstance(event, Malformed) and event.response.status == 400
    assert isinstance(event.response.body, bytes) and json.loads(event.response.body)["error"] == "http.target"


def test_any_target_parses_connect_and_replays_head_and_trailing_bytes() -> None:
    conn = ServerConnection(Limits(), "net", any_target=True)
    head = _head(conn, CONNECT + b"\x16\x03\x01hello")
    assert head.request.method == "CONNECT" and head.request.target == "ok.example:443"
    assert conn.takeover_bytes() == CONNECT + b"\x16\x03\x01hello"


def test_replay_starts_at_the_request_after_a_keep_alive_exchange() -> None:
    conn = ServerConnection(Limits(), "net", any_target=True)
    first = b"GET /v0/hello HTTP/1.1\r\nHost: net\r\n\r\n"
    _head(conn, first + CONNECT[:20])
    conn.next_event()  # EndOfMessage
    conn.response_head(Response(200), body_length=0)
    conn.end_bytes()
    assert conn.next_cycle()
    head = _head(conn, CONNECT[20:] + b"tail")
    assert head.request.method == "CONNECT"
    assert conn.takeover_bytes() == CONNECT + b"tail"


def test_takeover_bytes_only_right_after_the_head() -> None:
    conn = ServerConnection(Limits(), "net", any_target=True)
    _head(conn, b"POST http://x/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n")
    conn.receive_data(b"body")
    with pytest.raises(RuntimeError):
        conn.takeover_bytes()


async def _nothing(request: Request, stream: trio.abc.Stream) -> None:
    return None


def test_router_keeps_one_takeover_per_method() -> None:
    router = Router("net", [TakeoverRoute("CONNECT", _nothing)])
    assert router.takes_over and router.takeover("CONNECT") is not None and router.takeover("GET") is None
    assert not Router("fs").takes_over
    with pytest.raises(ValueError):
        router.add(TakeoverRoute("CONNECT", _nothing))


async def test_replay_stream_gives_already_read_bytes_first() -> None:
    left, right = trio.testing.memory_stream_pair()
    replay = ReplayStream(b"abcdef", right)
    await left.send_all(b"later")
    assert await replay.receive_some(4) == b"abcd"
    assert await replay.receive_some(4) == b"ef"
    assert await replay.receive_some(100) == b"later"


async def _hello(request: Request) -> Response:
    return json_response({"peer_role": request.peer_role})


async def _echo_takeover(request: Request, stream: trio.abc.Stream) -> None:
    """Says who it serves, then echoes every byte (the replayed request head first) until EOF."""
    await stream.send_all(f"{request.method} {request.target} for {request.peer_role}\n".encode())
    while data := await stream.receive_some(65536):
        await stream.send_all(data)
    await stream.aclose()


async def _crash(request: Request, stream: trio.abc.Stream) -> None:
    raise RuntimeError("secret value")


ROUTER = Router("net", [Route("GET", "/v0/hello", _hello), TakeoverRoute("CONNECT", _echo_takeover),
                        TakeoverRoute("PUT", _crash)])


async def _read_until(stream: trio.abc.Stream, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        piece = await stream.receive_some(65536)
        assert piece, data
        data += piece
    return data


async def _serve(nursery: trio.Nursery, gate: object = None) -> trio.abc.Stream:
    client, server = trio.testing.memory_stream_pair()
    exchanges: list[int] = []

    async def run() -> None:
        async with server:
            await serve_http(server, ROUTER, Limits(), gate=gate,  # type: ignore[arg-type]
                             on_exchange=lambda r, s: exchanges.append(s), peer_role="shell")

    nursery.start_soon(run)
    return client


async def test_connect_is_taken_over_after_ordinary_requests(nursery: trio.Nursery) -> None:
    client = await _serve(nursery)
    await client.send_all(b"GET /v0/hello HTTP/1.1\r\nHost: net\r\n\r\n")
    assert b'{"peer_role":"shell"}' in await _read_until(client, b"}")
    await client.send_all(CONNECT + b"first bytes")
    said = await _read_until(client, b"first bytes")
    assert said == b"CONNECT ok.example:443 for shell\n" + CONNECT + b"first bytes"
    await client.send_all(b"more")
    assert await _read_until(client, b"more") == b"more"


async def test_a_gate_refusal_comes_before_any_takeover(nursery: trio.Nursery) -> None:
    refusal = Response(403, body=b"edge", close=True)
    client = await _serve(nursery, gate=lambda request: refusal)
    await client.send_all(CONNECT)
    answer = await _read_until(client, b"edge")
    assert answer.startswith(b"HTTP/1.1 403") and b"CONNECT" not in answer


async def test_a_non_path_target_without_its_takeover_is_400(nursery: trio.Nursery) -> None:
    client = await _serve(nursery)
    await client.send_all(b"GET http://ok.example/v0/hello HTTP/1.1\r\nHost: ok.example\r\n\r\n")
    answer = await _read_until(client, b"}")
    assert answer.startswith(b"HTTP/1.1 400") and b'"error":"http.target"' in answer


async def test_a_crashing_takeover_closes_the_connection_without_its_text(
        nursery: trio.Nursery, caplog: pytest.LogCaptureFixture) -> None:
    client = await _serve(nursery)
    await client.send_all(b"PUT ok.example:1 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert await client.receive_some(100) == b""
    assert "RuntimeError" in caplog.text and "secret value" not in caplog.text
