"""The async door client (for doors calling doors): trio I/O for the decisions of client_policy.py."""

from __future__ import annotations

import contextlib
import datetime as dt
import select
from typing import Any

import trio

from doors._http import ClientConnection, ClientResponse, encode_body
from doors._refusal import DoorRefused
from doors._transport._errors import TransportError
from doors._transport._server import utc_now
from doors._transport._stream import TlsFailure, TlsStream
from doors._transport._tls import TlsSession
from doors._transport.client_policy import (
    RECEIVE_BYTES,
    Action,
    Address,
    ClientPolicy,
    Connect,
    Dial,
    Failure,
    Finish,
    Headers,
    Probe,
    Receive,
    Send,
    door_refusal,
    failure_error,
    read_response,
)

__all__ = ["Address", "AsyncDoorClient", "Dial", "connect", "exchange", "fresh_exchange", "readable_while_idle"]


async def _open(dial: Dial) -> trio.SocketStream:
    if isinstance(dial.address, str):
        return await trio.open_unix_socket(dial.address)
    return await trio.open_tcp_stream(*dial.address)


async def _handshake(dial: Dial, tls_session: TlsSession | None, *,
                     sends_next: bool = False) -> TlsStream | Failure:
    """A TLS connection to the door, offering `tls_session`, or what failed on the way.

    A caller that `sends_next` gets its Finished sent with its first request (one write, not two).
    """
    try:
        stream = await _open(dial)
    except OSError as exc:
        return Failure("unreachable", exc)
    try:
        tls = TlsStream.wrap(stream, dial.ctx, server_side=False, session=tls_session)
    except BaseException:
        await stream.aclose()
        raise
    try:
        await tls.do_handshake(hold_last_flight=sends_next)
    except TlsFailure as exc:
        await tls.aclose()
        return Failure("tls", exc, exc.ssl_error)
    except (trio.BrokenResourceError, OSError) as exc:
        # Sending the ClientHello to a door that already closed (it was full): not a bug, not a refusal.
        await tls.aclose()
        return Failure("closed", exc)
    except BaseException:
        await tls.aclose()
        raise
    return tls


async def _send(tls: TlsStream, data: bytes) -> None:
    with contextlib.suppress(TlsFailure, trio.BrokenResourceError, OSError):  # the policy's Send: read on
        await tls.send_all(data)


async def _receive(tls: TlsStream) -> bytes | Failure:
    try:
        return await tls.receive_some(RECEIVE_BYTES)
    except TlsFailure as exc:  # TlsStream reports resets as TlsFailure too
        return Failure("tls", exc, exc.ssl_error)


def readable_while_idle(tls: TlsStream) -> bool:
    """Whether an idle connection has bytes to read, in TLS's buffer or on its socket."""
    if tls.ssl_object.pending():
        return True
    sock = getattr(tls.transport, "socket", None)
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


async def connect(dial: Dial, *, tls_session: TlsSession | None = None,
                  now: dt.datetime | None = None) -> TlsStream:
    """Connect, handshake, and check that the peer is the dialled door of this session."""
    outcome = await _handshake(dial, tls_session)
    if isinstance(outcome, Failure):
        raise failure_error(dial, outcome, connecting=True)
    refusal = door_refusal(dial, outcome.peer_der(), now or utc_now())
    if refusal is not None:
        await outcome.aclose()
        raise refusal
    return outcome


async def exchange(tls: TlsStream, http: ClientConnection, dial: Dial, method: str, target: str,
                   body: bytes = b"", headers: Headers = ()) -> ClientResponse:
    """Send one request on `tls` and read its response; a door's refusal (alert or 403) raises DoorRefused."""
    await _send(tls, http.request_bytes(method, target, body, headers))
    while True:
        data = await _receive(tls)
        if isinstance(data, Failure):
            raise failure_error(dial, data, connecting=False)
        outcome = read_response(http, data, dial.role)
        if isinstance(outcome, (TransportError, DoorRefused)):
            raise outcome
        if outcome is not None:
            return outcome


async def fresh_exchange(dial: Dial, method: str = "GET", target: str = "/v0/hello", *,
                         tls_session: TlsSession | None = None) -> tuple[ClientResponse, TlsSession]:
    """One fresh connection, handshake and request, then close: the unit the handshake bench measures.

    Returns the response and the TLS session, which a later call may offer to resume.
    """
    async with AsyncDoorClient(dial, tls_session=tls_session) as client:
        response = await client.request(method, target)
    session = client.tls_session
    assert session is not None
    return response, session


class AsyncDoorClient:
    """Requests to one door over one kept-alive connection, reconnecting (with resumption) as needed."""

    def __init__(self, dial: Dial, *, timeout_s: float = 30.0, resume: bool = True,
                 tls_session: TlsSession | None = None) -> None:
        self.dial = dial
        self.timeout_s = timeout_s
        self._policy = ClientPolicy(dial, resume=resume, tls_session=tls_session)
        self._tls: TlsStream | None = None

    @property
    def tls_session(self) -> TlsSession | None:
        """The TLS session the next connection offers (the one kept from the last connection)."""
        return self._policy.tls_session

    async def request(self, method: str, path: str, json: Any = None, body: bytes | None = None,
                      headers: Headers = ()) -> ClientResponse:
        """Send a request (JSON or bytes body) and return the response; refusals raise DoorRefused."""
        payload, content_headers = encode_body(json, body)
        with trio.fail_after(self.timeout_s):
            try:
                finish = await self._drive(self._policy.begin(method, path, payload, content_headers + headers))
                if finish.read_session:
                    self._policy.keep_session(self._held().ssl_object.session)
                if finish.close:
                    await self._close_connection()
            except BaseException:
                await self.aclose()
                raise
        return finish.response

    async def _drive(self, step: Action) -> Finish:
        """Do the I/O each action names, reporting back, until the policy finishes or raises."""
        while not isinstance(step, Finish):
            if isinstance(step, Receive):
                data = await _receive(self._held())
                step = self._policy.failed(data) if isinstance(data, Failure) else self._policy.received(data)
            elif isinstance(step, Send):
                await _send(self._held(), step.data)
                step = self._policy.sent()
            elif isinstance(step, Probe):
                step = self._policy.probed(readable_while_idle(self._held()))
            elif isinstance(step, Connect):
                step = await self._connect(step.tls_session)
            else:  # Raise
                raise step.error
        return step

    async def _connect(self, tls_session: TlsSession | None) -> Action:
        await self._close_connection()
        outcome = await _handshake(self.dial, tls_session, sends_next=True)  # the policy sends or closes next
        if isinstance(outcome, Failure):
            return self._policy.failed(outcome)
        self._tls = outcome
        return self._policy.connected(outcome.peer_der(), utc_now())

    def _held(self) -> TlsStream:
        if self._tls is None:
            raise RuntimeError("client policy: an action on a connection the client does not hold")
        return self._tls

    async def _close_connection(self) -> None:
        tls, self._tls = self._tls, None
        if tls is not None:
            await tls.aclose()

    async def hello(self) -> dict[str, Any]:
        """GET /v0/hello: what the door is and which rows it holds."""
        response = await self.request("GET", "/v0/hello")
        return dict(response.json())

    async def aclose(self) -> None:
        """Close the kept connection (with close_notify, so its TLS session stays resumable)."""
        self._policy.dropped()
        await self._close_connection()

    async def __aenter__(self) -> AsyncDoorClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
