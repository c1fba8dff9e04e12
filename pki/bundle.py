"""SVID and trust-bundle encodings (SPIFFE delivery order) and loading them into an ssl context.

Doors read their key+chain from an inherited memfd through `/proc/self/fd/N`: no file on disk, ever.
"""

from __future__ import annotations

import os
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pki.issue import PrivateKey


def svid_pem(leaf_key: PrivateKey, leaf_cert: x509.Certificate) -> bytes:
    """PEM PKCS#8 private key, then the leaf certificate: what a role's memfd or 0400 file holds."""
    key_pem = leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem + leaf_cert.public_bytes(serialization.Encoding.PEM)


def system_store() -> bytes:
    """This machine's trust anchors (OpenSSL's default CA file), ending in a newline; empty when it has none."""
    paths = ssl.get_default_verify_paths()
    for path in (paths.cafile, paths.openssl_cafile):
        if path and os.path.isfile(path):
            with open(path, "rb") as store:
                content = store.read()
            return content if content.endswith(b"\n") or not content else content + b"\n"
    return b""


def bundle_pem(ca_cert: x509.Certificate) -> bytes:
    """The session trust bundle: the CA certificate in PEM."""
    return ca_cert.public_bytes(serialization.Encoding.PEM)


def _load(ctx: ssl.SSLContext, path: str, what: str) -> None:
    try:
        ctx.load_cert_chain(certfile=path, keyfile=path)
    except ssl.SSLError as exc:
        raise ValueError(f"{what} does not hold a PEM key and its leaf certificate ({exc.reason})") from exc
    except OSError as exc:
        raise OSError(exc.errno, f"cannot open {what}: {os.strerror(exc.errno or 0)}") from exc


def load_into_context(ctx: ssl.SSLContext, svid_fd: int) -> None:
    """Load key and chain from the inherited SVID memfd `svid_fd` (re-opened read-only by path)."""
    os.fstat(svid_fd)  # a closed fd fails here with EBADF, before OpenSSL hides the reason
    _load(ctx, f"/proc/self/fd/{svid_fd}", f"SVID fd {svid_fd}")


def load_file_into_context(ctx: ssl.SSLContext, path: str | os.PathLike[str]) -> None:
    """Load key and chain from the app's 0400 SVID file."""
    _load(ctx, os.fspath(path), f"SVID file {os.fspath(path)}")


def load_bundle_into_context(ctx: ssl.SSLContext, bundle: bytes) -> None:
    """Trust exactly the session bundle (call on a context with no default CAs loaded)."""
    ctx.load_verify_locations(cadata=bundle.decode("ascii"))
