"""A study prototype: the transport's TlsStream driven by pyOpenSSL (its bundled OpenSSL) instead of ssl.

It wraps connections with the transport's own pyOpenSSL pieces (doors/_transport/_pyossl.py) but from
contexts the study builds itself (bench/_tls.py: groups, tickets), so serve_mtls and the async client run
unchanged on each studied configuration in a bench process.
Installed by ``install`` in that process only; nothing here changes doors/ on disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from OpenSSL import SSL

import doors._transport._client as transport_client
import doors._transport._server as transport_server
from bench._certs import CertFiles
from bench._tls import TlsOptions, pyopenssl_context
from doors._transport._pyossl import IncomingBio, OutgoingBio, PyOpenSSLObject
from doors._transport._stream import TlsStream
from doors._transport._tls import TlsContext


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
        return cls(transport, PyOpenSSLObject(conn), IncomingBio(conn), OutgoingBio(conn))  # type: ignore[arg-type]


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
