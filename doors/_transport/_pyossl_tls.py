"""pyOpenSSL contexts for doors and clients, with the stdlib backend's policy, and their SVID loaders.

TLS 1.3 only, certificates required both ways, X509_STRICT, only the session bundle as trust, X25519 key
exchange with a P-256 fallback. Keys come from the SVID memfd (/proc/self/fd/N) or the app's file and
stay in memory: nothing is written to disk.
"""

from __future__ import annotations

import os

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL, crypto
from OpenSSL._util import lib as _lib

# X25519 first (cheapest on a Unix socket), P-256 for a peer without it. OpenSSL 4's default first share is
# the hybrid X25519MLKEM768: 0.15 ms more per handshake, worth it only where traffic leaves the host.
GROUPS = b"X25519:P-256"
# A server must name a session-id context, or OpenSSL refuses to resume a session whose peer it verified.
SESSION_ID_CONTEXT = b"sharness-door"


def _set_groups(ctx: SSL.Context, groups: bytes) -> None:
    """pyOpenSSL has no groups setter; its bindings carry SSL_CTX_set1_curves_list (the same call)."""
    if _lib.SSL_CTX_set1_curves_list(ctx._context, groups) != 1:
        raise ValueError(f"the bundled OpenSSL refused the key-exchange groups {groups.decode()!r}")


def _trust_only(ctx: SSL.Context, bundle_pem: bytes) -> None:
    """Trust exactly the session bundle (a fresh pyOpenSSL context has no default CAs), strictly."""
    store = ctx.get_cert_store()
    if store is None:
        raise RuntimeError("the bundled OpenSSL gave no certificate store")
    certs = x509.load_pem_x509_certificates(bundle_pem)
    for cert in certs:
        store.add_cert(crypto.X509.from_cryptography(cert))
    store.set_flags(crypto.X509StoreFlags.X509_STRICT)


def _context(bundle_pem: bytes | str, *, server: bool) -> SSL.Context:
    ctx = SSL.Context(SSL.TLS_METHOD)
    ctx.set_min_proto_version(SSL.TLS1_3_VERSION)
    ctx.set_max_proto_version(SSL.TLS1_3_VERSION)
    ctx.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT)
    _trust_only(ctx, bundle_pem.encode("ascii") if isinstance(bundle_pem, str) else bundle_pem)
    _set_groups(ctx, GROUPS)
    if server:
        ctx.set_session_id(SESSION_ID_CONTEXT)
    return ctx


def server_context(bundle_pem: bytes | str) -> SSL.Context:
    """A door's context without its SVID yet: load it with `load_svid_fd` or `load_svid_file`."""
    return _context(bundle_pem, server=True)


def client_context(bundle_pem: bytes | str) -> SSL.Context:
    """A client's context without its SVID yet; no hostname check, the SVID check replaces it."""
    return _context(bundle_pem, server=False)


def load_svid_pem(ctx: SSL.Context, pem: bytes, what: str) -> None:
    """Use the PEM key and leaf certificate (then any chain) in `pem` as this context's identity."""
    try:
        key = serialization.load_pem_private_key(pem, None)
        certs = x509.load_pem_x509_certificates(pem)
        ctx.use_certificate(certs[0])
        for extra in certs[1:]:
            ctx.add_extra_chain_cert(crypto.X509.from_cryptography(extra))
        ctx.use_privatekey(key)  # type: ignore[arg-type]  # an EC/RSA/Ed25519 key, as pki/ issues
        ctx.check_privatekey()
    except (ValueError, TypeError, SSL.Error) as exc:
        raise ValueError(f"{what} does not hold a PEM key and its leaf certificate ({exc})") from exc


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as source:
            return source.read()
    except OSError as exc:
        raise OSError(exc.errno, f"cannot open {what}: {os.strerror(exc.errno or 0)}") from exc


def load_svid_fd(ctx: SSL.Context, svid_fd: int) -> None:
    """Load key and chain from the inherited SVID memfd `svid_fd` (re-opened read-only by path)."""
    os.fstat(svid_fd)  # a closed fd fails here with EBADF
    what = f"SVID fd {svid_fd}"
    load_svid_pem(ctx, _read(f"/proc/self/fd/{svid_fd}", what), what)


def load_svid_file(ctx: SSL.Context, path: str | os.PathLike[str]) -> None:
    """Load key and chain from the app's 0400 SVID file."""
    what = f"SVID file {os.fspath(path)}"
    load_svid_pem(ctx, _read(os.fspath(path), what), what)
