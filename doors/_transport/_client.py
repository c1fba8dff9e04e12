"""The async door client (for doors calling doors), with keep-alive reuse and TLS session resumption."""

from __future__ import annotations

import contextlib
import datetime as dt
import select
from dataclasses import dataclass
from typing import Any

import trio

from doors._http import ClientConnection, ClientResponse, ResponseProtocolError, encode_body
from doors._transport._alerts import client_error, closed_in_handshake, connect_error, handshake_error
from doors._transport._errors import DoorNotTrusted, DoorUnavailable
from doors._transport._identity import check_door, refusal_from_response
from doors._transport._server import utc_now
from doors._transport._stream import TlsFailure, TlsStream
from doors._transport._tls import TlsContext, TlsSession

Address = str | tuple[str, int]
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class Dial:
    """Whom a client dials and how it checks the answer: the door's role, address, and the session."""

    role: str
    address: Address
    ctx: TlsContext
    trust_domain: str
    session_id: str
    client_role: str | None = None

    def where(self) -> str:
        return self.address if isinstance(self.address, str) else f"{self.address[0]}:{self.address[1]}"


async def _open(dial: Dial) -> trio.SocketStream:
    try:
        if isinstance(dial.address, str):
            return await trio.open_unix_socket(dial.address)
        return await trio.open_tcp_stream(*dial.address)
    except OSError as exc:
        raise connect_error(exc, dial.where(), dial.role, dial.client_role) from exc


async def connect(dial: Dial, *, tls_session: TlsSession | None = None,
                  now: dt.datetime | None = None) -> TlsStream:
    """Connect, handshake, and check that the peer is the dialled door of this session."""
    tls = TlsStream.wrap(await _open(dial), dial.ctx, server_side=False, session=tls_session)
    try:
        await tls.do_handshake()
        verdict = check_door(tls.peer_der(), dialled=dial.role, trust_domain=dial.trust_domain,
                             session_id=dial.session_id, now=now or utc_now())
        if not verdict.ok:
            raise DoorNotTrusted(dial.role, verdict.reason)
    except TlsFailure as exc:
        await tls.aclose()
        raise handshake_error(exc.ssl_error, str(exc), dial.role, dial.where()) from exc
    except (trio.BrokenResourceError, OSError) as exc:
        # Sending the ClientHello to a door that already closed (it was full): not a bug, not a refusal.
        await tls.aclose()
        raise closed_in_handshake(dial.role, dial.where(), str(exc) or type(exc).__name__) from exc
    except BaseException:
        await tls.aclose()
        raise
    return tls


async def exchange(tls: TlsStream, http: ClientConnection, dial: Dial, method: str, target: str,
                   body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()) -> ClientResponse:
    """Send one request and read its response; a door's refusal (alert or 403) raises DoorRefused."""
    try:
        # If sending fails the door may have refused and closed: its alert or answer is still to read.
        with contextlib.suppress(TlsFailure, trio.BrokenResourceError, OSError):
            await tls.send_all(http.request_bytes(method, target, body, headers))
        while (response := http.next_response()) is None:
            http.receive_data(await tls.receive_some())
    except TlsFailure as exc:
        raise client_error(exc.ssl_error, str(exc), dial.role) from exc
    except ResponseProtocolError as exc:
        raise DoorUnavailable(f"door {dial.role!r}: {exc}") from exc
    refusal = refusal_from_response(response, dial.role)
    if refusal is not None:
        raise refusal
    return response


async def fresh_exchange(dial: Dial, method: str = "GET", target: str = "/v0/hello", *,
                         tls_session: TlsSession | None = None) -> tuple[ClientResponse, TlsSession]:
    """One fresh connection, handshake and request, then close: the unit the handshake bench measures.

    Returns the response and the TLS session, which a later call may offer to resume.
    """
    tls = await connect(dial, tls_session=tls_session)
    try:
        response = await exchange(tls, ClientConnection(dial.role), dial, method, target)
        session = tls.ssl_object.session
        assert session is not None
        return response, session
    finally:
        await tls.aclose()


def is_stale(tls: TlsStream) -> bool:
    """An idle kept-alive connection with something to read has been closed by the door."""
    sock = getattr(tls.transport, "socket", None)
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class AsyncDoorClient:
    """Requests to one door over one kept-alive connection, reconnecting (with resumption) as needed."""

    def __init__(self, dial: Dial, *, timeout_s: float = 30.0, resume: bool = True) -> None:
        self.dial = dial
        self.timeout_s = timeout_s
        self.resume = resume
        self._tls: TlsStream | None = None
        self._http: ClientConnection | None = None
        self._session: TlsSession | None = None
        self._session_from: TlsStream | None = None

    async def request(self, method: str, path: str, json: Any = None, body: bytes | None = None,
                      headers: tuple[tuple[str, str], ...] = ()) -> ClientResponse:
        """Send a request (JSON or bytes body) and return the response; refusals raise DoorRefused."""
        payload, content_headers = encode_body(json, body)
        with trio.fail_after(self.timeout_s):
            reused = self._tls is not None
            try:
                return await self._once(method, path, payload, content_headers + headers)
            except DoorUnavailable:
                if not (reused and method in IDEMPOTENT):
                    raise
                return await self._once(method, path, payload, content_headers + headers)

    async def _once(self, method: str, path: str, payload: bytes,
                    headers: tuple[tuple[str, str], ...]) -> ClientResponse:
        tls, http = await self._connection()
        try:
            response = await exchange(tls, http, self.dial, method, path, payload, headers)
        except BaseException:
            await self.aclose()
            raise
        if self.resume and self._session_from is not tls:
            # Reading `.session` costs ~0.2 ms (OpenSSL copies it): once per connection, after the tickets.
            self._session, self._session_from = tls.ssl_object.session, tls
        if response.will_close or not http.next_cycle():
            await self.aclose()
        return response

    async def _connection(self) -> tuple[TlsStream, ClientConnection]:
        if self._tls is not None and is_stale(self._tls):
            await self.aclose()
        if self._tls is None or self._http is None:
            self._tls = await connect(self.dial, tls_session=self._session if self.resume else None)
            self._http = ClientConnection(self.dial.role)
        return self._tls, self._http

    async def hello(self) -> dict[str, Any]:
        """GET /v0/hello: what the door is and which rows it holds."""
        response = await self.request("GET", "/v0/hello")
        return dict(response.json())

    async def aclose(self) -> None:
        tls, self._tls, self._http = self._tls, None, None
        if tls is not None:
            await tls.aclose()

    async def __aenter__(self) -> AsyncDoorClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
