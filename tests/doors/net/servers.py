"""Test hosts for the net door: plain HTTP, HTTPS (trustme CA) and a raw TCP echo, each logging what it saw."""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass, field
from typing import Any

import h11
import trio

MAX = 64 * 1024


@dataclass
class Log:
    """What one test host saw: connections accepted and requests (method, target, Host, header names, body size)."""

    name: str
    connections: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)


def _respond(request: h11.Request, body_len: int, log: Log) -> tuple[h11.Response, bytes]:
    headers = {k.decode(): v.decode() for k, v in request.headers}
    seen = {"server": log.name, "method": request.method.decode(), "target": request.target.decode(),
            "host": headers.get("host", ""), "header_names": sorted(headers), "body_len": body_len}
    log.requests.append(seen)
    if request.target == b"/redirect":
        return h11.Response(status_code=302, headers=[(b"location", b"http://private.sharness.test/"),
                                                       (b"content-length", b"0")]), b""
    body = json.dumps(seen).encode()
    if request.target == b"/chunked":
        return h11.Response(status_code=200, headers=[(b"transfer-encoding", b"chunked")]), body
    if request.target.startswith(b"/big/"):
        body = b"x" * int(request.target[5:])
    response = h11.Response(status_code=200, headers=[(b"content-length", str(len(body)).encode()),
                                                      (b"x-hop", b"1"), (b"connection", b"keep-alive, x-hop")])
    return response, body


async def _http_conn(stream: trio.abc.Stream, log: Log) -> None:
    conn = h11.Connection(h11.SERVER)
    while True:
        request: h11.Request | None = None
        body_len = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(MAX)
                conn.receive_data(data)
                if not data and conn.their_state is not h11.SEND_BODY and request is None:
                    return
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body_len += len(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed) or event is h11.PAUSED:
                break
        if request is None:
            return
        response, body = _respond(request, body_len, log)
        await stream.send_all(conn.send(response) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return
        conn.start_next_cycle()


async def _guarded(handler: Any, stream: trio.abc.Stream, log: Log) -> None:
    log.connections += 1
    try:
        async with stream:
            await handler(stream, log)
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, ssl.SSLError, OSError):
        pass


async def serve_http(listener: trio.SocketListener, log: Log) -> None:
    """Plain HTTP/1.1 with keep-alive; `/redirect` points at the private host."""
    async with trio.open_nursery() as nursery:
        while True:
            stream = await listener.accept()
            nursery.start_soon(_guarded, _http_conn, stream, log)


async def _tls_then_http(stream: trio.abc.Stream, log: Log, context: ssl.SSLContext) -> None:
    tls = trio.SSLStream(stream, context, server_side=True)
    await tls.do_handshake()
    await _http_conn(tls, log)


async def serve_https(listener: trio.SocketListener, log: Log, context: ssl.SSLContext) -> None:
    """HTTPS with the trustme CA's certificate."""
    async with trio.open_nursery() as nursery:
        while True:
            stream = await listener.accept()
            nursery.start_soon(_guarded, lambda s, lg: _tls_then_http(s, lg, context), stream, log)


async def _echo(stream: trio.abc.Stream, log: Log) -> None:
    while data := await stream.receive_some(MAX):
        await stream.send_all(data)


async def serve_echo(listener: trio.SocketListener, log: Log) -> None:
    """Raw TCP: echo every byte."""
    async with trio.open_nursery() as nursery:
        while True:
            stream = await listener.accept()
            nursery.start_soon(_guarded, _echo, stream, log)
