"""The app's door client: blocking, one kept-alive mutual-TLS connection per door, JSON in and out.

    with DoorClient.from_env("fs") as fs:
        print(fs.hello())

Refusals raise DoorRefused(who, reason, hint): the kernel (socket permissions), the door's TLS (alert)
or the door's edge/SVID check (403). A peer that is not the dialled door raises DoorNotTrusted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import select
import socket
import ssl
from collections.abc import Mapping
from typing import Any

from doors._http import ClientConnection, ClientResponse, ResponseProtocolError, encode_body
from doors._transport import (
    BlockingTls,
    DoorNotTrusted,
    DoorRefused,
    DoorUnavailable,
    TlsContext,
    TlsSession,
    TransportError,
    check_door,
    client_context_from_file,
    client_error,
    closed_in_handshake,
    connect_error,
    handshake_error,
    refusal_from_response,
)

__all__ = ["ClientResponse", "DoorClient", "DoorNotTrusted", "DoorRefused", "DoorUnavailable",
           "TransportError", "fresh_request"]

Address = str | tuple[str, int]
Headers = tuple[tuple[str, str], ...]
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


def _open(address: Address, timeout_s: float, dialled: str, client_role: str | None) -> socket.socket:
    where = address if isinstance(address, str) else f"{address[0]}:{address[1]}"
    try:
        if isinstance(address, str):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout_s)
            try:
                sock.connect(address)
            except BaseException:
                sock.close()
                raise
            return sock
        return socket.create_connection(address, timeout=timeout_s)
    except OSError as exc:
        raise connect_error(exc, where, dialled, client_role) from exc


class _Connection:
    """One mutual-TLS connection to a door, checked, speaking HTTP/1.1."""

    def __init__(self, sock: ssl.SSLSocket | BlockingTls, role: str, timeout_s: float) -> None:
        self.sock = sock
        self.timeout_s = timeout_s
        self.http = ClientConnection(role)
        self.role = role

    def exchange(self, method: str, target: str, body: bytes, headers: Headers) -> ClientResponse:
        try:
            # If sending fails the door may have refused and closed: its alert or answer is still to read.
            with contextlib.suppress(ssl.SSLError, BrokenPipeError, ConnectionResetError):
                self.sock.sendall(self.http.request_bytes(method, target, body, headers))
            while (response := self.http.next_response()) is None:
                self.http.receive_data(self.sock.recv(65536))
        except ssl.SSLError as exc:
            raise client_error(exc, str(exc), self.role) from exc
        except TimeoutError as exc:
            raise DoorUnavailable(f"door {self.role!r} did not answer in time") from exc
        except (ResponseProtocolError, OSError) as exc:
            raise DoorUnavailable(f"door {self.role!r}: {exc}") from exc
        refusal = refusal_from_response(response, self.role)
        if refusal is not None:
            raise refusal
        return response

    def stale(self) -> bool:
        """An idle kept-alive connection that is readable has been closed by the door."""
        try:
            self.sock.settimeout(0)
            return bool(self.sock.pending()) or _readable(self.sock)
        finally:
            self.sock.settimeout(self.timeout_s)

    def close(self) -> None:
        self.sock.close()


def _readable(sock: socket.socket | BlockingTls) -> bool:
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def _handshake(raw: socket.socket, ctx: TlsContext, tls_session: TlsSession | None) -> ssl.SSLSocket | BlockingTls:
    """TLS on `raw` with the backend of `ctx` (both raise stdlib-shaped ssl errors)."""
    if isinstance(ctx, ssl.SSLContext):
        if tls_session is not None and not isinstance(tls_session, ssl.SSLSession):
            raise TypeError("an ssl.SSLContext cannot resume a pyOpenSSL session: offer its own session")
        return ctx.wrap_socket(raw, server_side=False, session=tls_session)
    return BlockingTls.connect(raw, ctx, tls_session)


def connect_door(address: Address, ctx: TlsContext, *, role: str, trust_domain: str, session_id: str,
                 client_role: str | None = None, timeout_s: float = 30.0,
                 tls_session: TlsSession | None = None) -> _Connection:
    """Connect, handshake, and check that the peer is door `role` of this session."""
    raw = _open(address, timeout_s, role, client_role)
    where = address if isinstance(address, str) else f"{address[0]}:{address[1]}"
    try:
        sock = _handshake(raw, ctx, tls_session)
    except ssl.SSLError as exc:
        raw.close()
        raise handshake_error(exc, str(exc), role, where) from exc
    except TimeoutError as exc:
        raw.close()
        raise DoorUnavailable(f"door {role!r} at {where} did not finish the TLS handshake in time") from exc
    except OSError as exc:
        raw.close()
        raise closed_in_handshake(role, where, str(exc)) from exc
    verdict = check_door(sock.getpeercert(binary_form=True), dialled=role, trust_domain=trust_domain,
                         session_id=session_id, now=dt.datetime.now(dt.UTC))
    if not verdict.ok:
        sock.close()
        raise DoorNotTrusted(role, verdict.reason)
    return _Connection(sock, role, timeout_s)


def fresh_request(address: Address, ctx: TlsContext, *, role: str, trust_domain: str, session_id: str,
                  method: str = "GET", target: str = "/v0/hello",
                  tls_session: TlsSession | None = None) -> tuple[ClientResponse, TlsSession | None]:
    """One fresh connection, handshake and request, then close (the unit a handshake bench measures)."""
    conn = connect_door(address, ctx, role=role, trust_domain=trust_domain, session_id=session_id,
                        tls_session=tls_session)
    try:
        response = conn.exchange(method, target, b"", ())
        return response, conn.sock.session
    finally:
        conn.close()


class DoorClient:
    """Requests to one door over a kept-alive connection; reconnects (resuming TLS) when the door closed it."""

    def __init__(self, role: str, socket_path: Address, svid_path: str, bundle_path: str, trust_domain: str,
                 session_id: str, *, client_role: str | None = "app", timeout_s: float = 30.0,
                 resume: bool = True, ctx: TlsContext | None = None) -> None:
        if ctx is None:
            with open(bundle_path, "rb") as bundle:
                ctx = client_context_from_file(bundle.read(), svid_path)
        self.role = role
        self.address = socket_path
        self.ctx = ctx
        self.trust_domain = trust_domain
        self.session_id = session_id
        self.client_role = client_role
        self.timeout_s = timeout_s
        self.resume = resume
        self._conn: _Connection | None = None
        self._tls_session: TlsSession | None = None
        self._session_from: _Connection | None = None

    @classmethod
    def from_env(cls, role: str, environ: Mapping[str, str] | None = None, **options: Any) -> DoorClient:
        """A client for door `role` from the SHARNESS_* variables the launcher gives the app."""
        env = os.environ if environ is None else environ
        key = f"SHARNESS_DOOR_{role.upper()}"
        names = ("SHARNESS_SVID", "SHARNESS_BUNDLE", "SHARNESS_TRUST_DOMAIN", "SHARNESS_SESSION")
        missing = [name for name in (key, *names) if not env.get(name)]
        if missing:
            raise DoorRefused("launcher", f"{', '.join(missing)} not set: no door {role!r} in this session",
                              f"add the door and the edge app->{role} to the manifest", row="edges")
        return cls(role, env[key], *(env[name] for name in names), **options)

    def request(self, method: str, path: str, json: Any = None, body: bytes | None = None,
                headers: Headers = ()) -> ClientResponse:
        """Send a request (JSON or bytes body) and return the response; refusals raise DoorRefused."""
        payload, content_headers = encode_body(json, body)
        reused = self._conn is not None
        try:
            return self._once(method, path, payload, content_headers + headers)
        except DoorUnavailable:
            if not (reused and method in IDEMPOTENT):
                raise
            return self._once(method, path, payload, content_headers + headers)

    def _once(self, method: str, path: str, payload: bytes, headers: Headers) -> ClientResponse:
        conn = self._connection()
        try:
            response = conn.exchange(method, path, payload, headers)
        except BaseException:
            self.close()
            raise
        if self.resume and self._session_from is not conn:
            # Reading `.session` costs ~0.2 ms (OpenSSL copies it): once per connection, after the tickets.
            self._tls_session, self._session_from = conn.sock.session, conn
        if response.will_close or not conn.http.next_cycle():
            self.close()
        return response

    def _connection(self) -> _Connection:
        if self._conn is not None and self._conn.stale():
            self.close()
        if self._conn is None:
            self._conn = connect_door(self.address, self.ctx, role=self.role, trust_domain=self.trust_domain,
                                      session_id=self.session_id, client_role=self.client_role,
                                      timeout_s=self.timeout_s,
                                      tls_session=self._tls_session if self.resume else None)
        return self._conn

    def hello(self) -> dict[str, Any]:
        """GET /v0/hello: what the door is and which rows it holds."""
        return dict(self.request("GET", "/v0/hello").json())

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> DoorClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
