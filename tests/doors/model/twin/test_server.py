"""Hostile input to the twin server: each gets an error in the API's shape, and the twin stays up."""

from __future__ import annotations

import gzip
import json
import socket
import tracemalloc
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from doors.model.twin import ApiError, TwinUpstream
from doors.model.twin._request import inflate_gzip
from doors.model.twin._server import ServerLimits, serve_connection, serve_twin

from .conftest import MAX_BODY_BYTES, TwinServer

MESSAGE = json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}).encode()


def _exchange(server: TwinServer, raw: bytes) -> bytes:
    """Send `raw`, half-close, and read until the twin closes."""
    with socket.create_connection((server.host, server.port)) as sock:
        try:
            sock.sendall(raw)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the twin refused early and closed: what it answered is still readable
        received = bytearray()
        while chunk := sock.recv(65536):
            received += chunk
    return bytes(received)


def _request(body: bytes, *extra: str, path: str = "/v1/messages") -> bytes:
    head = [f"POST {path} HTTP/1.1", "host: twin", "anthropic-version: 2023-06-01",
            f"content-length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _status_and_error(response: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = response.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    value = json.loads(body)
    assert value["type"] == "error" and set(value["error"]) == {"type", "message"}, value
    assert value["request_id"].startswith("req_twin")
    return status, value["error"]


def _alive(server: TwinServer) -> None:
    response = _exchange(server, _request(MESSAGE, "connection: close"))
    assert response.startswith(b"HTTP/1.1 200 "), response[:200]
    assert server.process.poll() is None


@pytest.mark.parametrize(("raw", "status", "error_type"), [
    (b"GARBAGE\r\n\r\n", 400, "invalid_request_error"),
    (b"POST /v1/messages HTTP/1.1\r\nno colon here\r\n\r\n", 400, "invalid_request_error"),
    (b"POST /v1/messages HTTP/1.1\r\nhost: t\r\ncontent-length: nope\r\n\r\n", 400, "invalid_request_error"),
    (b"POST /v1/messages HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", 400,
     "invalid_request_error"),
    (b"GET / HTTP/1.1\r\nhost: t\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n", 413, "request_too_large"),
    (_request(b"{not json"), 400, "invalid_request_error"),
    (_request(b"\xff\xfe"), 400, "invalid_request_error"),
    (_request(b"x" * (MAX_BODY_BYTES + 1)), 413, "request_too_large"),
    (f"POST /v1/messages HTTP/1.1\r\nhost: t\r\ncontent-length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode(), 413,
     "request_too_large"),  # refused on the declared length, before any body byte
    (_request(b"not gzip", "content-encoding: gzip"), 400, "invalid_request_error"),
    (_request(gzip.compress(b" " * (MAX_BODY_BYTES + 10)), "content-encoding: gzip"), 413, "request_too_large"),
    (_request(MESSAGE, "content-encoding: br"), 400, "invalid_request_error"),
])
def test_hostile_input_gets_the_api_error_shape(twin_server: TwinServer, raw: bytes, status: int,
                                                error_type: str) -> None:
    got_status, error = _status_and_error(_exchange(twin_server, raw))
    assert (got_status, error["type"]) == (status, error_type), error
    _alive(twin_server)


def test_a_chunked_body_past_the_limit_is_refused(twin_server: TwinServer) -> None:
    piece = b"x" * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(MAX_BODY_BYTES // len(piece) + 1))
    raw = (b"POST /v1/messages HTTP/1.1\r\nhost: t\r\nanthropic-version: 1\r\ntransfer-encoding: chunked\r\n\r\n"
           + chunks + b"0\r\n\r\n")
    assert _status_and_error(_exchange(twin_server, raw))[0] == 413
    _alive(twin_server)


def test_a_gzip_body_is_inflated(twin_server: TwinServer) -> None:
    response = _exchange(twin_server, _request(gzip.compress(MESSAGE), "content-encoding: gzip",
                                               "connection: close"))
    assert response.startswith(b"HTTP/1.1 200 ") and b'"text":"twin: hi"' in response


def test_keep_alive_serves_several_requests_on_one_connection(twin_server: TwinServer) -> None:
    response = _exchange(twin_server, _request(MESSAGE) * 2 + _request(MESSAGE, "connection: close"))
    assert response.count(b"HTTP/1.1 200 ") == 3


def test_a_client_gone_mid_request_or_mid_stream_leaves_the_twin_up(twin_server: TwinServer) -> None:
    with socket.create_connection((twin_server.host, twin_server.port)) as sock:
        sock.sendall(_request(MESSAGE)[:40])
    stream = json.dumps({"model": "m", "max_tokens": 4000, "stream": True,
                         "messages": [{"role": "user", "content": "x" * 4000 + " [twin:slow=1]"}]}).encode()
    with socket.create_connection((twin_server.host, twin_server.port)) as sock:
        sock.sendall(_request(stream))
        assert sock.recv(100).startswith(b"HTTP/1.1 200 ")
    _alive(twin_server)


def test_the_query_string_is_not_part_of_the_route(twin_server: TwinServer) -> None:
    response = _exchange(twin_server, _request(MESSAGE, "connection: close", path="/v1/messages?beta=true"))
    assert response.startswith(b"HTTP/1.1 200 ")


def test_a_gzip_bomb_is_refused_holding_no_more_than_the_limit() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB in about 64 KiB
    tracemalloc.start()
    try:
        refused = inflate_gzip(bomb, limit=1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(refused, ApiError) and refused.status == 413
    assert peak < 8 * 1024 * 1024  # the limit and a few buffers, not the 64 MiB it claims


@pytest.mark.parametrize(("body", "result"), [
    (gzip.compress(b"abc"), b"abc"),
    (gzip.compress(b"abc")[:-4], "truncated"),
    (b"plain", "corrupt"),
])
def test_inflate_gzip(body: bytes, result: bytes | str) -> None:
    inflated = inflate_gzip(body, limit=100)
    if isinstance(result, bytes):
        assert inflated == result
    else:
        assert isinstance(inflated, ApiError) and inflated.status == 400 and result in inflated.message


async def test_a_bug_in_the_twin_is_a_500_in_the_api_shape_and_the_server_stays_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = TwinUpstream()
    answer = upstream.twin.answer

    def broken(method: bytes, path: bytes, headers: Any, body: bytes) -> Any:
        if path == b"/v1/broken":
            raise KeyError("a bug")
        return answer(method, path, headers, body)

    monkeypatch.setattr(upstream.twin, "answer", broken)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve_twin, "127.0.0.1", 0, upstream)
        for path, status in (("/v1/broken", 500), ("/v1/messages", 200)):
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(_request(MESSAGE, "connection: close", path=path))
            received = bytearray()
            while chunk := await stream.receive_some(65536):
                received += chunk
            await stream.aclose()
            assert received.startswith(b"HTTP/1.1 %d " % status)
            if status == 500:
                assert _status_and_error(bytes(received))[1]["type"] == "api_error"
        nursery.cancel_scope.cancel()


def _serve_bytes(raw: bytes) -> bytes:
    """What the twin's connection handler answers to `raw` followed by the client's end of sending."""

    async def run() -> bytes:
        client, server = trio.testing.memory_stream_pair()
        received = bytearray()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_connection, server, TwinUpstream(), ServerLimits(max_body_bytes=4096))
            await client.send_all(raw)
            await client.send_eof()
            while chunk := await client.receive_some(65536):
                received += chunk
        return bytes(received)

    return trio.run(run)


HEADS = st.sampled_from([b"POST /v1/messages HTTP/1.1\r\nhost: t\r\nanthropic-version: 1\r\n",
                         b"GET /v1/models HTTP/1.1\r\nhost: t\r\n", b"POST /v1/messages HTTP/1.0\r\n", b""])


@settings(max_examples=300, deadline=None)
@given(HEADS, st.binary(max_size=300))
def test_any_bytes_get_an_answer_in_the_api_shape_or_a_close(head: bytes, tail: bytes) -> None:
    """The first answer to any bytes, if there is one, is HTTP/1.1; an error one is in the API's shape."""
    answered = _serve_bytes(head + tail)
    if not answered:
        return
    assert answered.startswith(b"HTTP/1.1 ")
    status_line, _, rest = answered.partition(b"\r\n")
    head_lines, _, body = rest.partition(b"\r\n\r\n")
    if int(status_line.split()[1]) >= 400:
        length = next(int(line.split(b":")[1]) for line in head_lines.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        assert json.loads(body[:length])["type"] == "error"


def test_head_gets_the_head_alone_and_the_connection_goes_on() -> None:
    """Claude Code sends `HEAD /api/hello` first: a 404 head with no body, then the next request is served."""
    answered = _serve_bytes(b"HEAD /api/hello HTTP/1.1\r\nhost: t\r\n\r\nGET /v1/models HTTP/1.1\r\nhost: t\r\n\r\n")
    first, _, second = answered.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert second.startswith(b"HTTP/1.1 200 OK\r\n") and b'"data":[' in second


async def test_a_body_that_never_comes_closes_the_connection(autojump_clock: trio.testing.MockClock) -> None:
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_connection, server, TwinUpstream(), ServerLimits())
        await client.send_all(_request(MESSAGE)[:-5])  # the head and most of the body; then nothing
        with trio.fail_after(2 * ServerLimits().body_timeout_s):  # on the mock clock: no test waits in real time
            assert await client.receive_some(65536) == b""  # closed, at body_timeout_s
    assert trio.current_time() >= ServerLimits().body_timeout_s
