"""The app's way to the model door over mutual TLS: an httpx transport for the official anthropic SDK.

    from doors.model.client import anthropic_client
    client = anthropic_client()  # the SHARNESS_* variables name the socket, the SVID and the session
    client.messages.create(...)

An unmodified client needs none of this: ANTHROPIC_BASE_URL points it at the door's plain-HTTP listener in
its network namespace. This transport is for a client that would rather be known by its SVID. One connection
per request, its peer checked to be this session's model door (doors.client.connect_door); the response
body is read as it arrives, so streams stream.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping
from typing import Any

import h11
import httpx2

from doors._transport import BlockingTls, Dial
from doors.client import DoorClient, connect_door

RECEIVE = 64 * 1024
# What goes in ANTHROPIC_API_KEY's place: the door ignores what a client sends as a credential.
PLACEHOLDER_KEY = "placeholder: the model door knows this client by its SVID"
# Never sent anywhere: the connection goes to the door's socket, whatever the URL's host says.
DOOR_BASE_URL = "http://model.door.sharness"


class _Body(httpx2.SyncByteStream):
    def __init__(self, sock: ssl.SSLSocket | BlockingTls, conn: h11.Connection) -> None:
        self._sock = sock
        self._conn = conn

    def __iter__(self) -> Iterator[bytes]:
        while True:
            event = _next_event(self._sock, self._conn)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    def close(self) -> None:
        self._sock.close()


def _next_event(sock: ssl.SSLSocket | BlockingTls, conn: h11.Connection) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        try:
            data = sock.recv(RECEIVE)
        except (ssl.SSLError, OSError) as exc:
            raise httpx2.ReadError(f"the model door's connection broke: {exc}") from exc
        conn.receive_data(data)


class DoorTransport(httpx2.BaseTransport):
    """Each request on a fresh mutual-TLS connection to the model door that `dial` names."""

    def __init__(self, dial: Dial, *, timeout_s: float = 600.0) -> None:
        self.dial = dial
        self.timeout_s = timeout_s

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        sock = connect_door(self.dial, timeout_s=self.timeout_s)
        try:
            conn = h11.Connection(h11.CLIENT)
            headers = [(name, value) for name, value in request.headers.raw
                       if name.lower() not in (b"connection", b"content-length", b"transfer-encoding")]
            headers += [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
            target = request.url.raw_path
            out = conn.send(h11.Request(method=request.method.encode(), target=target, headers=headers)) or b""
            out += (conn.send(h11.Data(data=body)) or b"") if body else b""
            sock.sendall(out + (conn.send(h11.EndOfMessage()) or b""))
            head = _next_event(sock, conn)
            if not isinstance(head, h11.Response):
                raise httpx2.RemoteProtocolError("the model door closed the connection before answering")
        except BaseException:
            sock.close()
            raise
        return httpx2.Response(head.status_code, headers=list(head.headers), stream=_Body(sock, conn),
                               extensions={"http_version": b"HTTP/1.1"})


def door_http_client(environ: Mapping[str, str] | None = None, **options: Any) -> httpx2.Client:
    """An httpx client whose every request goes to this session's model door over mutual TLS."""
    dial = DoorClient.from_env("model", environ).dial
    return httpx2.Client(transport=DoorTransport(dial), base_url=DOOR_BASE_URL, **options)


def anthropic_client(environ: Mapping[str, str] | None = None, **options: Any) -> Any:
    """The official SDK's client, talking to the model door over mutual TLS (needs the `anthropic` package)."""
    import anthropic

    return anthropic.Anthropic(base_url=DOOR_BASE_URL, api_key=PLACEHOLDER_KEY,
                               http_client=door_http_client(environ), **options)
