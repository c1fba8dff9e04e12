"""A pyOpenSSL connection with the surface of ssl.SSLObject and its two MemoryBIOs, for TlsStream.

pyOpenSSL runs the bundled OpenSSL (4.x, about 35% cheaper per mutual handshake than the system's 3.0:
docs/decisions/bench.md). Its errors become the ssl errors TlsStream and `_alerts` already handle.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from typing import TypeVar

from OpenSSL import SSL, crypto
from OpenSSL._util import ffi as _ffi
from OpenSSL._util import lib as _lib

from doors._transport._pyossl_errors import as_ssl_error, eof_error

BIO_CHUNK = 64 * 1024
X509_V_OK = 0
T = TypeVar("T")


def _verify_message(conn: SSL.Connection) -> str | None:
    """Why certificate verification failed on `conn` (X509_verify_cert_error_string), or None."""
    code = _lib.SSL_get_verify_result(conn._ssl)
    if code == X509_V_OK:
        return None
    return str(_ffi.string(_lib.X509_verify_cert_error_string(code)).decode("ascii", "replace"))


def as_stdlib_error(conn: SSL.Connection, exc: SSL.Error) -> ssl.SSLError:
    """The ssl error the stdlib would have raised for pyOpenSSL's `exc` on `conn`."""
    if isinstance(exc, SSL.WantReadError):
        return ssl.SSLWantReadError("The operation did not complete (read)")
    if isinstance(exc, SSL.WantWriteError):
        return ssl.SSLWantWriteError("The operation did not complete (write)")
    if isinstance(exc, SSL.ZeroReturnError):
        return ssl.SSLZeroReturnError("TLS/SSL connection has been closed (EOF)")
    if isinstance(exc, SSL.SysCallError):
        return eof_error()
    errors = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
    return as_ssl_error(errors, _verify_message(conn))


def call(conn: SSL.Connection, operation: Callable[[], T]) -> T:
    """Run one pyOpenSSL operation on `conn`, raising the ssl error the stdlib would have raised."""
    try:
        return operation()
    except (SSL.WantReadError, SSL.WantWriteError, SSL.ZeroReturnError) as exc:
        raise as_stdlib_error(conn, exc) from None
    except SSL.Error as exc:
        raise as_stdlib_error(conn, exc) from exc


def peer_der(conn: SSL.Connection) -> bytes | None:
    """The peer's leaf certificate in DER (also on a resumed session: OpenSSL keeps it in the session)."""
    cert = conn.get_peer_certificate()
    return None if cert is None else crypto.dump_certificate(crypto.FILETYPE_ASN1, cert)


class PyOpenSSLObject:
    """The part of ssl.SSLObject that TlsStream and the clients use, on a memory-BIO pyOpenSSL connection."""

    def __init__(self, conn: SSL.Connection) -> None:
        self.conn = conn

    def do_handshake(self) -> None:
        call(self.conn, self.conn.do_handshake)

    def read(self, size: int = BIO_CHUNK) -> bytes:
        return call(self.conn, lambda: self.conn.recv(size))

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Encrypt all of `data` (pyOpenSSL enables partial writes; the memory BIO never blocks)."""
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            sent += call(self.conn, functools.partial(self.conn.send, view[sent:]))
        return sent

    def unwrap(self) -> None:
        """Send close_notify: without it OpenSSL marks the session not resumable when the connection is freed."""
        call(self.conn, self.conn.shutdown)

    def pending(self) -> int:
        return self.conn.pending()

    @property
    def session(self) -> SSL.Session | None:
        """The session to offer on a later connection (the same object: close_notify keeps it resumable)."""
        return self.conn.get_session()

    @property
    def session_reused(self) -> bool:
        return bool(_lib.SSL_session_reused(self.conn._ssl))

    def version(self) -> str | None:
        return self.conn.get_protocol_version_name()

    def getpeercert(self, binary_form: bool = False) -> bytes | None:
        """The peer's leaf certificate in DER; only the binary form is offered."""
        if not binary_form:
            raise ValueError("the pyOpenSSL backend gives the peer certificate in DER only (binary_form=True)")
        return peer_der(self.conn)


class IncomingBio:
    """ssl.MemoryBIO's writing side: bytes from the peer into OpenSSL."""

    def __init__(self, conn: SSL.Connection) -> None:
        self._conn = conn

    def write(self, data: bytes | bytearray) -> int:
        return self._conn.bio_write(bytes(data))

    def write_eof(self) -> None:
        self._conn.bio_shutdown()


class OutgoingBio:
    """ssl.MemoryBIO's reading side: what OpenSSL wrote for the peer."""

    def __init__(self, conn: SSL.Connection) -> None:
        self._conn = conn

    def read(self) -> bytes:
        pieces = []
        while True:
            try:
                piece = self._conn.bio_read(BIO_CHUNK)
            except SSL.WantReadError:
                break
            pieces.append(piece)
            if len(piece) < BIO_CHUNK:
                break  # a memory BIO hands out all it holds, up to the size asked
        return b"".join(pieces)


def client_or_server(conn: SSL.Connection, server_side: bool, session: object | None) -> SSL.Connection:
    """Set `conn` to accept or to connect; a client may offer `session` (from this backend) to resume it."""
    if session is not None:
        if not isinstance(session, SSL.Session):
            raise TypeError(f"a pyOpenSSL context cannot resume a {type(session).__name__}: offer its own session")
        conn.set_session(session)
    if server_side:
        conn.set_accept_state()
    else:
        conn.set_connect_state()
    return conn


def memory_connection(ctx: SSL.Context, *, server_side: bool,
                      session: object | None = None) -> tuple[PyOpenSSLObject, IncomingBio, OutgoingBio]:
    """A memory-BIO connection on `ctx`; a client may offer `session` (from this backend) to resume it."""
    conn = client_or_server(SSL.Connection(ctx, None), server_side, session)
    return PyOpenSSLObject(conn), IncomingBio(conn), OutgoingBio(conn)
