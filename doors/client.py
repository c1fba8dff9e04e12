"""The app's door client: blocking, one kept-alive mutual-TLS connection per door, JSON in and out.

    with DoorClient.from_env("fs") as fs:
        print(fs.hello())

What to do next (reuse, resumption, the door's identity, the one retry) is decided by
doors/_transport/client_policy.py, as for the doors' async client; this module does the blocking I/O.
Refusals raise DoorRefused, whose `refusal` names the row, who refused (the kernel on the socket, the
door's TLS with an alert, or its edge/SVID check with a 403), the detail and the hint. A peer that is not
the dialled door raises DoorNotTrusted.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import ssl
from collections.abc import Mapping
from typing import Any

from doors._http import ClientResponse, encode_body
from doors._refusal import Refusal
from doors._transport import (
    Address,
    BlockingTls,
    Dial,
    DoorNotTrusted,
    DoorRefused,
    DoorUnavailable,
    TlsContext,
    TlsSession,
    TransportError,
    client_context_from_file,
    utc_now,
)
from doors._transport.client_policy import (
    RECEIVE_BYTES,
    Action,
    ClientPolicy,
    Connect,
    Failure,
    Finish,
    Headers,
    Probe,
    Receive,
    Send,
    door_refusal,
    failure_error,
)

__all__ = ["ClientResponse", "Dial", "DoorClient", "DoorNotTrusted", "DoorRefused", "DoorUnavailable",
           "TransportError", "connect_door", "fresh_request", "sock_readable_while_idle"]

# A send that fails is not a failure: the door may have refused and closed, and its answer is still to read.
_SEND_REFUSED = (ssl.SSLError, BrokenPipeError, ConnectionResetError)


def _open(address: Address, timeout_s: float) -> socket.socket:
    if isinstance(address, tuple):
        return socket.create_connection(address, timeout=timeout_s)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _wrap(raw: socket.socket, ctx: TlsContext, tls_session: TlsSession | None,
          sends_next: bool) -> ssl.SSLSocket | BlockingTls:
    """TLS on `raw` with the backend of `ctx` (both raise stdlib-shaped ssl errors); a caller that
    `sends_next` has pyOpenSSL send its Finished with the first request."""
    if isinstance(ctx, ssl.SSLContext):
        if tls_session is not None and not isinstance(tls_session, ssl.SSLSession):
            raise TypeError("an ssl.SSLContext cannot resume a pyOpenSSL session: offer its own session")
        return ctx.wrap_socket(raw, server_side=False, session=tls_session)
    return BlockingTls.connect(raw, ctx, tls_session, hold_last_flight=sends_next)


def sock_readable_while_idle(sock: ssl.SSLSocket | BlockingTls) -> bool:
    """Whether an idle blocking TLS connection has bytes to read, in TLS's buffer or on the socket: the door closed
    it (or sent what no request asked for), so it is not reused."""
    if sock.pending():
        return True
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class _Connection:
    """One mutual-TLS connection to a door, its handshake done."""

    def __init__(self, sock: ssl.SSLSocket | BlockingTls) -> None:
        self.sock = sock

    def readable_while_idle(self) -> bool:
        """Whether it has bytes to read, in TLS's buffer or on the socket."""
        return sock_readable_while_idle(self.sock)

    def close(self) -> None:
        self.sock.close()


def _handshake(dial: Dial, tls_session: TlsSession | None, timeout_s: float,
               sends_next: bool = False) -> _Connection | Failure:
    """A TLS connection to the door, offering `tls_session`, or what failed on the way."""
    try:
        raw = _open(dial.address, timeout_s)
    except OSError as exc:
        return Failure("unreachable", exc)
    try:
        return _Connection(_wrap(raw, dial.ctx, tls_session, sends_next))
    except ssl.SSLError as exc:
        failure = Failure("tls", exc, exc)
    except TimeoutError as exc:
        failure = Failure("timeout", exc)
    except OSError as exc:
        failure = Failure("closed", exc)
    except BaseException:
        raw.close()
        raise
    raw.close()
    return failure


def connect_door(dial: Dial, *, timeout_s: float = 30.0) -> ssl.SSLSocket | BlockingTls:
    """A raw mutual-TLS stream to the door `dial` names, its identity checked (for callers framing their own HTTP)."""
    outcome = _handshake(dial, None, timeout_s)
    if isinstance(outcome, Failure):
        raise failure_error(dial, outcome, connecting=True)
    refusal = door_refusal(dial, outcome.sock.getpeercert(binary_form=True), utc_now())
    if refusal is not None:
        outcome.close()
        raise refusal
    return outcome.sock


class DoorClient:
    """Requests to one door over a kept-alive connection; reconnects (resuming TLS) when the door closed it."""

    def __init__(self, dial: Dial, *, timeout_s: float = 30.0, resume: bool = True,
                 tls_session: TlsSession | None = None) -> None:
        self.dial = dial
        self.timeout_s = timeout_s
        self._policy = ClientPolicy(dial, resume=resume, tls_session=tls_session)
        self._conn: _Connection | None = None

    @classmethod
    def from_files(cls, role: str, address: Address, svid_path: str, bundle_path: str, trust_domain: str,
                   session_id: str, *, client_role: str | None = "app", **options: Any) -> DoorClient:
        """A client for door `role` at `address`, with an SVID file and a bundle file (the app's delivery)."""
        with open(bundle_path, "rb") as bundle:
            ctx = client_context_from_file(bundle.read(), svid_path)
        return cls(Dial(role, address, ctx, trust_domain, session_id, client_role), **options)

    @classmethod
    def from_env(cls, role: str, environ: Mapping[str, str] | None = None, **options: Any) -> DoorClient:
        """A client for door `role` from the SHARNESS_* variables the launcher gives the app."""
        env = os.environ if environ is None else environ
        key = f"SHARNESS_DOOR_{role.upper()}"
        names = ("SHARNESS_SVID", "SHARNESS_BUNDLE", "SHARNESS_TRUST_DOMAIN", "SHARNESS_SESSION")
        missing = [name for name in (key, *names) if not env.get(name)]
        if missing:
            raise DoorRefused(Refusal(403, "edges", "launcher",
                                      f"{', '.join(missing)} not set: no door {role!r} in this session",
                                      f"add the door and the edge app->{role} to the manifest"))
        return cls.from_files(role, env[key], *(env[name] for name in names), **options)

    @property
    def tls_session(self) -> TlsSession | None:
        """The TLS session the next connection offers (the one kept from the last connection)."""
        return self._policy.tls_session

    def request(self, method: str, path: str, json: Any = None, body: bytes | None = None,
                headers: Headers = ()) -> ClientResponse:
        """Send a request (JSON or bytes body) and return the response; refusals raise DoorRefused."""
        payload, content_headers = encode_body(json, body)
        try:
            finish = self._drive(self._policy.begin(method, path, payload, content_headers + headers))
            if finish.read_session:
                self._policy.keep_session(self._held().sock.session)
            if finish.close:
                self._close_connection()
        except BaseException:
            self.close()
            raise
        return finish.response

    def _drive(self, step: Action) -> Finish:
        """Do the I/O each action names, reporting back, until the policy finishes or raises."""
        while not isinstance(step, Finish):
            if isinstance(step, (Receive, Send)):
                step = self._transfer(self._held(), step)
            elif isinstance(step, Probe):
                step = self._policy.probed(self._held().readable_while_idle())
            elif isinstance(step, Connect):
                step = self._connect(step.tls_session)
            else:  # Raise
                raise step.error
        return step

    def _connect(self, tls_session: TlsSession | None) -> Action:
        self._close_connection()
        outcome = _handshake(self.dial, tls_session, self.timeout_s, sends_next=True)  # the policy sends or closes
        if isinstance(outcome, Failure):
            return self._policy.failed(outcome)
        self._conn = outcome
        return self._policy.connected(outcome.sock.getpeercert(binary_form=True), utc_now())

    def _transfer(self, conn: _Connection, step: Receive | Send) -> Action:
        try:
            if isinstance(step, Send):
                with contextlib.suppress(*_SEND_REFUSED):
                    conn.sock.sendall(step.data)
                return self._policy.sent()
            data = conn.sock.recv(RECEIVE_BYTES)
        except ssl.SSLError as exc:
            return self._policy.failed(Failure("tls", exc, exc))
        except TimeoutError as exc:
            return self._policy.failed(Failure("timeout", exc))
        except OSError as exc:
            return self._policy.failed(Failure("closed", exc))
        return self._policy.received(data)

    def _held(self) -> _Connection:
        if self._conn is None:
            raise RuntimeError("client policy: an action on a connection the client does not hold")
        return self._conn

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def hello(self) -> dict[str, Any]:
        """GET /v0/hello: what the door is and which rows it holds."""
        return dict(self.request("GET", "/v0/hello").json())

    def close(self) -> None:
        """Close the kept connection (with close_notify on pyOpenSSL, so its TLS session stays resumable)."""
        self._policy.dropped()
        self._close_connection()

    def __enter__(self) -> DoorClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def fresh_request(address: Address, ctx: TlsContext, *, role: str, trust_domain: str, session_id: str,
                  method: str = "GET", target: str = "/v0/hello",
                  tls_session: TlsSession | None = None) -> tuple[ClientResponse, TlsSession | None]:
    """One fresh connection, handshake and request, then close (the unit a handshake bench measures)."""
    with DoorClient(Dial(role, address, ctx, trust_domain, session_id), tls_session=tls_session) as client:
        response = client.request(method, target)
    return response, client.tls_session
