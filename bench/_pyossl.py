"""A study prototype: the transport's TlsStream driven by pyOpenSSL (its bundled OpenSSL) instead of ssl.

A shim gives a pyOpenSSL memory-BIO connection the surface TlsStream uses from ssl.SSLObject and
ssl.MemoryBIO, so serve_mtls and the async client run unchanged on OpenSSL 4 in a bench process.
Installed by ``install`` in that process only; nothing here changes doors/ on disk.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from OpenSSL import SSL, crypto

import doors._transport._client as transport_client
import doors._transport._server as transport_server
from bench._certs import CertFiles
from bench._tls import TlsOptions, pyopenssl_context
from doors._transport._stream import TlsStream
from doors._transport._tls import TlsContext

_BIO_CHUNK = 1 << 16


def _translate(exc: SSL.Error) -> ssl.SSLError:
    if isinstance(exc, SSL.WantReadError):
        return ssl.SSLWantReadError("read more")
    if isinstance(exc, SSL.ZeroReturnError):
        return ssl.SSLZeroReturnError("TLS close_notify")
    if isinstance(exc, SSL.SysCallError):
        return ssl.SSLEOFError("EOF without close_notify")
    return ssl.SSLError(str(exc))


class _Incoming:
    def __init__(self, conn: SSL.Connection) -> None:
        self._conn = conn

    def write(self, data: bytes) -> int:
        return self._conn.bio_write(data)

    def write_eof(self) -> None:
        self._conn.bio_shutdown()


class _Outgoing:
    def __init__(self, conn: SSL.Connection) -> None:
        self._conn = conn

    def read(self) -> bytes:
        pieces = []
        while True:
            try:
                pieces.append(self._conn.bio_read(_BIO_CHUNK))
            except SSL.WantReadError:
                return b"".join(pieces)


class _SSLObjectShim:
    """The part of ssl.SSLObject that TlsStream and the clients touch, on a pyOpenSSL connection."""

    def __init__(self, conn: SSL.Connection) -> None:
        self._conn = conn

    def do_handshake(self) -> None:
        try:
            self._conn.do_handshake()
        except SSL.Error as exc:
            raise _translate(exc) from exc

    def read(self, size: int) -> bytes:
        try:
            return self._conn.recv(size)
        except SSL.Error as exc:
            raise _translate(exc) from exc

    def write(self, data: bytes) -> int:
        try:
            return self._conn.send(bytes(data))
        except SSL.Error as exc:
            raise _translate(exc) from exc

    def unwrap(self) -> None:
        try:
            self._conn.shutdown()
        except SSL.Error as exc:
            raise _translate(exc) from exc

    @property
    def session(self) -> SSL.Session | None:
        return self._conn.get_session()  # no copy: the shutdown above keeps it resumable

    def getpeercert(self, binary_form: bool = False) -> bytes | None:
        cert = self._conn.get_peer_certificate()
        return None if cert is None else crypto.dump_certificate(crypto.FILETYPE_ASN1, cert)


@dataclass
class _Contexts:
    server: SSL.Context | None = None
    client: SSL.Context | None = None


_CONTEXTS = _Contexts()


class PyOpenSSLTlsStream(TlsStream):
    """TlsStream whose TLS is pyOpenSSL's; the ssl.SSLContext argument is ignored for the installed one."""

    @classmethod
    def wrap(cls, transport: object, ctx: TlsContext, *, server_side: bool,
             session: object | None = None) -> TlsStream:
        py_ctx = _CONTEXTS.server if server_side else _CONTEXTS.client
        if py_ctx is None:
            raise RuntimeError("bench: install() the pyOpenSSL contexts before wrapping")
        conn = SSL.Connection(py_ctx, None)
        if session is not None:
            conn.set_session(session)  # type: ignore[arg-type]
        if server_side:
            conn.set_accept_state()
        else:
            conn.set_connect_state()
        return cls(transport, _SSLObjectShim(conn), _Incoming(conn), _Outgoing(conn))  # type: ignore[arg-type]


def install(files: CertFiles, server_side: bool, options: TlsOptions) -> None:
    """Make this process's transport use pyOpenSSL with ``files`` for the given side (until uninstall)."""
    install_context(pyopenssl_context(files, server_side, options), server_side)


def install_context(py_ctx: SSL.Context, server_side: bool) -> None:
    """Make this process's transport use ``py_ctx`` for the given side (until uninstall)."""
    if server_side:
        _CONTEXTS.server = py_ctx
        transport_server.TlsStream = PyOpenSSLTlsStream  # type: ignore[misc]
    else:
        _CONTEXTS.client = py_ctx
        transport_client.TlsStream = PyOpenSSLTlsStream  # type: ignore[misc]


def uninstall() -> None:
    """Give this process's transport back its stdlib TlsStream on both sides."""
    transport_server.TlsStream = TlsStream  # type: ignore[misc]
    transport_client.TlsStream = TlsStream  # type: ignore[misc]
    _CONTEXTS.server = _CONTEXTS.client = None


@contextmanager
def installed(files: CertFiles, server_side: bool, options: TlsOptions) -> Iterator[None]:
    """``install`` for the duration of a block."""
    install(files, server_side, options)
    try:
        yield
    finally:
        uninstall()
