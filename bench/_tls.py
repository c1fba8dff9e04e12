"""TLS 1.3 mutual-auth contexts for the bench pairs: stdlib ``ssl`` and pyOpenSSL, one recipe each."""

from __future__ import annotations

import ssl
from dataclasses import asdict, dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL, crypto
from OpenSSL._util import lib as _lib

from bench._certs import CertFiles

_GROUP_CURVES = {"P-256": "prime256v1", "P-384": "secp384r1"}


@dataclass(frozen=True)
class TlsOptions:
    """What a variant changes: key-exchange group, TLS 1.3 suite, tickets per handshake."""

    group: str = ""  # "" = library default (3.0: X25519; 4.0: X25519MLKEM768), or X25519, P-256, P-384
    ciphersuite: str = ""  # "" = library default; pyOpenSSL only (stdlib 3.11 cannot set 1.3 suites)
    num_tickets: int = -1  # -1 = library default (2); stdlib server only

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def stdlib_context(files: CertFiles, server: bool, options: TlsOptions) -> ssl.SSLContext:
    """A stdlib context: TLS 1.3 only, certificate required both ways, the bundle as the only trust."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT  # as the transport does
    ctx.check_hostname = False  # SVIDs carry a URI SAN, no DNS name: the role check is the caller's
    ctx.load_cert_chain(str(files.cert), str(files.key))
    ctx.load_verify_locations(cafile=str(files.bundle))
    if options.group and options.group != "X25519":  # X25519 is 3.0's first group; 3.11 cannot name it
        ctx.set_ecdh_curve(_GROUP_CURVES[options.group])
    if server and options.num_tickets >= 0:
        ctx.num_tickets = options.num_tickets
    return ctx


def _set_groups(ctx: SSL.Context, group: str) -> None:
    """pyOpenSSL has no groups setter; its bindings do carry SSL_CTX_set1_curves_list (same call)."""
    name = {"P-256": "P-256", "P-384": "P-384"}.get(group, group).encode()
    if _lib.SSL_CTX_set1_curves_list(ctx._context, name) != 1:
        raise ValueError(f"bench: the bundled OpenSSL refused the key-exchange group {group!r}")


def pyopenssl_context(files: CertFiles, server: bool, options: TlsOptions) -> SSL.Context:
    """The same recipe on pyOpenSSL, whose wheel bundles its own (newer) OpenSSL."""
    svid_pem = files.key.read_bytes() + (b"" if files.cert == files.key else files.cert.read_bytes())
    return pyopenssl_context_from_pem(svid_pem, files.bundle.read_bytes(), server, options)


def pyopenssl_context_from_pem(svid_pem: bytes, bundle_pem: bytes, server: bool, options: TlsOptions) -> SSL.Context:
    """pyOpenSSL context from PEM bytes (key and leaf, then the bundle): no file needed, like a memfd."""
    ctx = SSL.Context(SSL.TLS_METHOD)
    ctx.set_min_proto_version(SSL.TLS1_3_VERSION)
    ctx.set_max_proto_version(SSL.TLS1_3_VERSION)
    ctx.use_certificate(x509.load_pem_x509_certificate(svid_pem))
    ctx.use_privatekey(serialization.load_pem_private_key(svid_pem, None))  # type: ignore[arg-type]
    store = ctx.get_cert_store()
    assert store is not None
    store.add_cert(crypto.X509.from_cryptography(x509.load_pem_x509_certificate(bundle_pem)))
    store.set_flags(crypto.X509StoreFlags.X509_STRICT)
    ctx.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT)
    if server:
        ctx.set_session_id(b"sharness-bench")  # OpenSSL refuses to resume a verified session without it
    if options.group:
        _set_groups(ctx, options.group)
    if options.ciphersuite:
        ctx.set_tls13_ciphersuites(options.ciphersuite.encode())
    return ctx
