"""What a door client does next, decided once for both drivers. Sans-IO: events in, actions out.

The algorithm, for each request:
1. A connection kept alive from an earlier request is reused, unless it turned readable while idle: the
   door closed it (idle timeout, restart), so it is dropped and a new one dialled.
2. A new connection offers the TLS session kept from an earlier one (resumption), then the peer's SVID
   is checked: it must be the dialled door of this session. Resumption does not skip that check.
3. The request goes out and the response comes back over HTTP/1.1. A door's TLS alert or its 403 on the
   transport rows (`edges`, `svid`) is a refusal.
4. A request that began on a kept connection and is idempotent is retried once, on a fresh connection,
   when the door turned out to be unavailable: the kept connection may have died in between.
5. The TLS session is read once per connection, after its first response (its tickets have arrived by
   then; reading it costs ~0.2 ms on the stdlib backend, where OpenSSL copies it).

The blocking driver (doors/client.py) and the trio driver (_client.py) do the I/O each action names and
report what happened; neither decides anything.
"""

from __future__ import annotations

import datetime as dt
import ssl
from dataclasses import dataclass
from typing import Literal

from doors._http import ClientConnection, ClientResponse, ResponseProtocolError
from doors._refusal import DoorRefused
from doors._transport._alerts import client_error, closed_in_handshake, connect_error, handshake_error
from doors._transport._errors import DoorNotTrusted, DoorUnavailable, TransportError
from doors._transport._identity import check_door, refusal_from_response
from doors._transport._tls import TlsContext, TlsSession

# What a client raises: it could not reach the right door, or the door (or the kernel) refused it.
ClientError = TransportError | DoorRefused

Address = str | tuple[str, int]
Headers = tuple[tuple[str, str], ...]
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRIES_IF_IDEMPOTENT = 1
RECEIVE_BYTES = 64 * 1024


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


FailureKind = Literal["unreachable", "tls", "timeout", "closed"]


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong in a driver's I/O, in words common to both backends.

    unreachable: opening the socket failed (`cause` is the OSError). tls: OpenSSL failed (`ssl_error`,
    None when the TLS layer saw a reset). timeout: the socket's timeout expired. closed: the connection
    broke under TLS (reset, broken pipe, end of stream).
    """

    kind: FailureKind
    cause: BaseException
    ssl_error: ssl.SSLError | None = None

    @property
    def detail(self) -> str:
        return str(self.cause) or type(self.cause).__name__


def failure_error(dial: Dial, failure: Failure, *, connecting: bool) -> ClientError:
    """The error a client raises for `failure`, while connecting (socket and handshake) or after."""
    role, where = dial.role, dial.where()
    error: ClientError
    if failure.kind == "unreachable" and isinstance(failure.cause, OSError):
        error = connect_error(failure.cause, where, role, dial.client_role)
    elif failure.kind == "timeout":
        error = DoorUnavailable(f"door {role!r} at {where} did not finish the TLS handshake in time" if connecting
                                else f"door {role!r} did not answer in time")
    elif failure.kind == "tls":
        error = (handshake_error(failure.ssl_error, failure.detail, role, where) if connecting
                 else client_error(failure.ssl_error, failure.detail, role))
    else:
        error = (closed_in_handshake(role, where, failure.detail) if connecting
                 else DoorUnavailable(f"door {role!r}: {failure.detail}"))
    error.__cause__ = failure.cause
    return error


def door_refusal(dial: Dial, peer_der: bytes | None, now: dt.datetime) -> DoorNotTrusted | None:
    """None when the peer's SVID is the dialled door's in this session, else why this client refuses it."""
    verdict = check_door(peer_der, dialled=dial.role, trust_domain=dial.trust_domain,
                         session_id=dial.session_id, now=now)
    return None if verdict.ok else DoorNotTrusted(dial.role, verdict.reason)


def read_response(http: ClientConnection, data: bytes, dialled: str) -> ClientResponse | ClientError | None:
    """Feed `data` (b"" at end of stream) to `http`: the response, the error it means, or None for more."""
    http.receive_data(data)
    try:
        response = http.next_response()
    except ResponseProtocolError as exc:
        error = DoorUnavailable(f"door {dialled!r}: {exc}")
        error.__cause__ = exc
        return error
    if response is None:
        return None
    refusal = refusal_from_response(response, dialled)
    return response if refusal is None else refusal


# --- actions: what the driver does next -------------------------------------------------------------------


class Probe:
    """Look whether the kept connection is readable (bytes in TLS's buffer or on the socket); report `probed`."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Connect:
    """Close any connection held, dial, and handshake offering `tls_session`; report `connected` or `failed`."""

    tls_session: TlsSession | None


@dataclass(frozen=True, slots=True)
class Send:
    """Send `data`, then report `sent`; a send that fails is not a failure (the door may have refused and
    closed: its alert or its answer is still there to read)."""

    data: bytes


class Receive:
    """Read up to RECEIVE_BYTES from the connection; report `received` (b"" at end of stream) or `failed`."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Finish:
    """Return `response`: first report the connection's TLS session to `keep_session` if `read_session`,
    then close the connection if `close`."""

    response: ClientResponse
    read_session: bool
    close: bool


@dataclass(frozen=True, slots=True)
class Raise:
    """Close the connection held and raise `error`."""

    error: ClientError


Action = Probe | Connect | Send | Receive | Finish | Raise
PROBE, RECEIVE = Probe(), Receive()
Phase = Literal["idle", "probing", "connecting", "sending", "receiving"]


@dataclass(slots=True)
class _Request:
    method: str
    target: str
    body: bytes
    headers: Headers
    reused: bool  # it began on a kept connection, which may have died while idle
    retries_left: int


class ClientPolicy:
    """The decisions of one client of one door: one request at a time, one connection kept between them."""

    def __init__(self, dial: Dial, *, resume: bool = True, tls_session: TlsSession | None = None) -> None:
        self.dial = dial
        self.resume = resume
        self.tls_session = tls_session  # offered on the next dial, when resuming
        self.phase: Phase = "idle"
        self._http: ClientConnection | None = None  # the HTTP state of the connection held, if any
        self._session_read = False
        self._request: _Request | None = None

    @property
    def holding(self) -> bool:
        """Whether the driver holds a checked connection (between requests: a kept-alive one)."""
        return self._http is not None

    def begin(self, method: str, target: str, body: bytes = b"", headers: Headers = ()) -> Action:
        """A request starts."""
        self._expect("idle")
        retries = RETRIES_IF_IDEMPOTENT if method in IDEMPOTENT else 0
        self._request = _Request(method, target, body, headers, self.holding, retries)
        if self.holding:
            self.phase = "probing"
            return PROBE
        return self._dial()

    def probed(self, readable: bool) -> Action:
        """The kept connection was looked at: readable while idle means the door closed it."""
        self._expect("probing")
        if readable:
            self._http = None
            return self._dial()
        return self._send()

    def connected(self, peer_der: bytes | None, now: dt.datetime) -> Action:
        """The handshake finished and the peer presented `peer_der` (also on a resumed session)."""
        self._expect("connecting")
        refusal = door_refusal(self.dial, peer_der, now)
        if refusal is not None:
            return self._raise(refusal)
        self._http, self._session_read = ClientConnection(self.dial.role), False
        return self._send()

    def sent(self) -> Action:
        """The request went out, or sending it failed: read the door's answer either way."""
        self._expect("sending")
        self.phase = "receiving"
        return RECEIVE

    def received(self, data: bytes) -> Action:
        """Bytes arrived from the door (b"" when it closed the connection)."""
        self._expect("receiving")
        assert self._http is not None
        outcome = read_response(self._http, data, self.dial.role)
        if outcome is None:
            return RECEIVE
        if isinstance(outcome, (TransportError, DoorRefused)):
            return self._fail(outcome)
        return self._finish(outcome)

    def failed(self, failure: Failure) -> Action:
        """The driver's I/O failed while connecting or exchanging."""
        if self.phase not in ("connecting", "sending", "receiving"):
            raise RuntimeError(f"client policy: a failure reported while {self.phase}")
        return self._fail(failure_error(self.dial, failure, connecting=self.phase == "connecting"))

    def keep_session(self, session: TlsSession | None) -> None:
        """The TLS session a `Finish` asked for, to offer when dialling again."""
        self.tls_session = session

    def dropped(self) -> None:
        """The driver closed its connection on its own (close(), a cancellation, an unexpected error)."""
        self._http, self._request, self.phase = None, None, "idle"

    def _expect(self, phase: Phase) -> None:
        if self.phase != phase:
            raise RuntimeError(f"client policy: expected {phase}, was {self.phase}")

    def _dial(self) -> Connect:
        self.phase = "connecting"
        return Connect(self.tls_session if self.resume else None)

    def _send(self) -> Send:
        assert self._http is not None and self._request is not None
        request, self.phase = self._request, "sending"
        return Send(self._http.request_bytes(request.method, request.target, request.body, request.headers))

    def _finish(self, response: ClientResponse) -> Finish:
        assert self._http is not None
        keep = self._http.next_cycle()  # False after `Connection: close` too
        read_session = self.resume and not self._session_read
        self._session_read = self._session_read or read_session
        if not keep:
            self._http = None
        self._request, self.phase = None, "idle"
        return Finish(response, read_session, close=not keep)

    def _fail(self, error: ClientError) -> Action:
        request = self._request
        assert request is not None
        self._http = None
        if isinstance(error, DoorUnavailable) and request.reused and request.retries_left > 0:
            request.retries_left -= 1
            return self._dial()
        return self._raise(error)

    def _raise(self, error: ClientError) -> Raise:
        self._http, self._request, self.phase = None, None, "idle"
        return Raise(error)
