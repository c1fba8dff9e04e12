"""Write responses and refusals to the client through h11 (no hand-written framing)."""

from __future__ import annotations

import contextlib
from http import HTTPStatus

import h11
import trio

from doors.net._refusal import ProxyRefusal

# A TLS alert record, fatal access_denied (49): what a TLS client hears when its hello is refused.
TLS_ACCESS_DENIED = b"\x15\x03\x03\x00\x02\x02\x31"


def phrase(status: int) -> bytes:
    """The standard reason phrase for `status`."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


def refusal_bytes(conn: h11.Connection, refused: ProxyRefusal, close: bool) -> bytes:
    """The whole refusal response, framed by `conn`."""
    body = refused.body()
    headers = refused.headers(len(body))
    if close:
        headers.append((b"connection", b"close"))
    status = refused.refusal.status
    response = h11.Response(status_code=status, headers=headers, reason=phrase(status))
    parts = [conn.send(response), conn.send(h11.Data(data=body)), conn.send(h11.EndOfMessage())]
    return b"".join(part for part in parts if part)


async def send_refusal(stream: trio.abc.Stream, conn: h11.Connection | None, refused: ProxyRefusal,
                       close: bool = False) -> None:
    """Send `refused`; without a parsed request, a fresh h11 state frames it (and the door closes)."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
        await stream.send_all(refusal_bytes(conn or h11.Connection(h11.SERVER), refused, close or conn is None))
