"""A client for the proxy under test: raw sockets from the app's namespace, h11 for responses."""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any

import h11
import trio

MAX = 64 * 1024


@dataclass
class Reply:
    """One HTTP response as the client saw it."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def refusal(self) -> str:
        return self.headers.get("x-sharness-refusal", "")


async def read_reply(stream: trio.abc.Stream, buf: bytes = b"", method: bytes = b"GET") -> tuple[Reply | None, bytes]:
    """Read one response (None if the proxy closed first); returns the bytes after it."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target=b"x:1" if method == b"CONNECT" else b"/", headers=[(b"host", b"x")]))
    conn.send(h11.EndOfMessage())
    if buf:
        conn.receive_data(buf)  # b"" would mean end of stream to h11
    reply: Reply | None = None
    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(MAX))
            continue
        if isinstance(event, h11.Response):
            reply = Reply(event.status_code, {k.decode(): v.decode() for k, v in event.headers}, b"")
            if method == b"CONNECT" and 200 <= event.status_code < 300:
                return reply, bytes(conn.trailing_data[0])
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert reply is not None
            reply.body = body
            return reply, bytes(conn.trailing_data[0])
        elif isinstance(event, h11.ConnectionClosed):
            return None, b""


async def connect(stream: trio.abc.Stream, authority: str) -> Reply:
    """Send CONNECT and read the proxy's answer (the tunnel follows on `stream` when it is 2xx)."""
    await stream.send_all(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    reply, rest = await read_reply(stream, method=b"CONNECT")
    assert reply is not None, "the proxy closed without answering"
    assert rest == b""
    return reply


async def https_get(stream: trio.abc.Stream, context: ssl.SSLContext, sni: str, path: str = "/") -> Reply:
    """TLS (with `sni`) through an open tunnel, then GET `path`."""
    tls = trio.SSLStream(stream, context, server_hostname=sni)
    await tls.send_all(f"GET {path} HTTP/1.1\r\nHost: {sni}\r\nConnection: close\r\n\r\n".encode())
    reply, _ = await read_reply(tls)
    assert reply is not None
    return reply


async def http(stream: trio.abc.Stream, raw: bytes, count: int = 1) -> list[Reply | None]:
    """Send raw request bytes (maybe pipelined) and read `count` responses."""
    await stream.send_all(raw)
    replies: list[Reply | None] = []
    rest = b""
    for _ in range(count):
        reply, rest = await read_reply(stream, rest)
        replies.append(reply)
        if reply is None:
            break
    return replies
