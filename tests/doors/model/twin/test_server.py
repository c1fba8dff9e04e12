"""Hostile input to the twin server: each gets an error in the API's shape, and the twin stays up."""

from __future__ import annotations

import gzip
import json
import socket
from typing import Any

import pytest

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
