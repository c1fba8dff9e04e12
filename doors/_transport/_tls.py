"""TLS contexts for doors and their clients: TLS 1.3 only, certificates both ways, only the session bundle.

No hostname check: a peer's identity is the SPIFFE ID in its SVID, which we check ourselves after the
handshake (OpenSSL does not enforce the one-URI rule, the session, or the role).

Two backends give the same policy: pyOpenSSL (its bundled OpenSSL 4, the default: docs/decisions/transport.md)
and the stdlib's ssl (the system's OpenSSL 3.0). `BACKEND` picks one, in code only: no environment variable
or argument of a door's process can change it. Streams and clients follow the context they are given.
"""

from __future__ import annotations

import os
import ssl
from typing import Final, Literal

from OpenSSL import SSL

from doors._transport import _pyossl_tls
from pki.bundle import load_bundle_into_context, load_file_into_context, load_into_context

Backend = Literal["pyopenssl", "stdlib"]
BACKEND: Final[Backend] = "pyopenssl"
TlsContext = ssl.SSLContext | SSL.Context
TlsSession = ssl.SSLSession | SSL.Session


def _harden(ctx: ssl.SSLContext, bundle_pem: bytes | str) -> ssl.SSLContext:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    bundle = bundle_pem.encode("ascii") if isinstance(bundle_pem, str) else bundle_pem
    load_bundle_into_context(ctx, bundle)
    return ctx


def stdlib_server_context(bundle_pem: bytes | str) -> ssl.SSLContext:
    """The stdlib backend's door context without its SVID yet."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # One resumption ticket per handshake, not OpenSSL's two: clients keep one (docs/decisions/bench.md:
    # 1.97 → 1.74 ms of CPU per full handshake, both sides).
    ctx.num_tickets = 1
    return _harden(ctx, bundle_pem)


def stdlib_client_context(bundle_pem: bytes | str) -> ssl.SSLContext:
    """The stdlib backend's client context without its SVID yet; hostname checking is off."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    return _harden(ctx, bundle_pem)


def server_context(bundle_pem: bytes | str, backend: Backend | None = None) -> TlsContext:
    """A door's context without its SVID yet: load it with `load_svid_fd` or `load_svid_file`."""
    if (backend or BACKEND) == "pyopenssl":
        return _pyossl_tls.server_context(bundle_pem)
    return stdlib_server_context(bundle_pem)


def client_context(bundle_pem: bytes | str, backend: Backend | None = None) -> TlsContext:
    """A client's context without its SVID yet; hostname checking is off, the SVID check replaces it."""
    if (backend or BACKEND) == "pyopenssl":
        return _pyossl_tls.client_context(bundle_pem)
    return stdlib_client_context(bundle_pem)


def load_svid_fd(ctx: TlsContext, svid_fd: int) -> None:
    """Load a context's key and chain from the inherited SVID memfd (no file on disk)."""
    if isinstance(ctx, ssl.SSLContext):
        load_into_context(ctx, svid_fd)
    else:
        _pyossl_tls.load_svid_fd(ctx, svid_fd)


def load_svid_file(ctx: TlsContext, svid_path: str | os.PathLike[str]) -> None:
    """Load a context's key and chain from a key+chain PEM file."""
    if isinstance(ctx, ssl.SSLContext):
        load_file_into_context(ctx, svid_path)
    else:
        _pyossl_tls.load_svid_file(ctx, svid_path)


def server_context_from_fd(bundle_pem: bytes | str, svid_fd: int, backend: Backend | None = None) -> TlsContext:
    """A door's context with its SVID from the inherited memfd (no file on disk)."""
    ctx = server_context(bundle_pem, backend)
    load_svid_fd(ctx, svid_fd)
    return ctx


def server_context_from_file(bundle_pem: bytes | str, svid_path: str | os.PathLike[str],
                             backend: Backend | None = None) -> TlsContext:
    """A server context with its SVID from a key+chain PEM file (tests, the TCP topology)."""
    ctx = server_context(bundle_pem, backend)
    load_svid_file(ctx, svid_path)
    return ctx


def client_context_from_file(bundle_pem: bytes | str, svid_path: str | os.PathLike[str],
                             backend: Backend | None = None) -> TlsContext:
    """A client context with its SVID from a key+chain PEM file (the app's SPIFFE delivery file)."""
    ctx = client_context(bundle_pem, backend)
    load_svid_file(ctx, svid_path)
    return ctx


def client_context_from_fd(bundle_pem: bytes | str, svid_fd: int, backend: Backend | None = None) -> TlsContext:
    """A client context for a door that calls another door, with its SVID from its memfd."""
    ctx = client_context(bundle_pem, backend)
    load_svid_fd(ctx, svid_fd)
    return ctx
