"""Bench-only session certificates of a chosen key type, written as files every server can load.

The headline figures use ``pki.testing.SessionPKI`` once it exists; this module also mints the
variants (Ed25519, P-384, RSA) that the option study compares and the session PKI does not offer.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TRUST_DOMAIN = "bench.sharness.test"
SESSION_ID = "0badbe9c"
KEY_TYPES = ("p256", "p384", "ed25519", "rsa2048")

PrivateKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class CertFiles:
    """Paths of one role's certificate and key and of the trust bundle."""

    cert: Path
    key: Path
    bundle: Path


def _new_key(key_type: str) -> PrivateKey:
    if key_type == "p256":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "p384":
        return ec.generate_private_key(ec.SECP384R1())
    if key_type == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    if key_type == "rsa2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"bench: unknown key type {key_type!r}; choose one of {KEY_TYPES}")


def _hash_for(key: PrivateKey) -> hashes.SHA256 | None:
    return None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()


def _builder(subject: str, issuer: str, public_key: object, days: int) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(seconds=30))
        .not_valid_after(now + dt.timedelta(days=days))
    )


def _ca(key: PrivateKey) -> x509.Certificate:
    builder = (
        _builder("bench session CA", "bench session CA", key.public_key(), 2)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    )
    return builder.sign(key, _hash_for(key))


def _leaf(role: str, key: PrivateKey, ca_key: PrivateKey) -> x509.Certificate:
    uri = f"spiffe://{TRUST_DOMAIN}/session/{SESSION_ID}/{role}"
    builder = (
        _builder(role, "bench session CA", key.public_key(), 1)
        .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
    )
    return builder.sign(ca_key, _hash_for(ca_key))


def _pem_key(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_bench_pki(directory: Path, roles: tuple[str, ...], key_type: str = "p256") -> dict[str, CertFiles]:
    """Mint a CA and one leaf per role of ``key_type`` into ``directory``; return the files per role."""
    ca_key = _new_key(key_type)
    bundle = directory / "bundle.crt"
    bundle.write_bytes(_ca(ca_key).public_bytes(serialization.Encoding.PEM))
    files: dict[str, CertFiles] = {}
    for role in roles:
        key = _new_key(key_type)
        cert_path, key_path = directory / f"{role}.crt", directory / f"{role}.key"
        cert_path.write_bytes(_leaf(role, key, ca_key).public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(key))
        key_path.chmod(0o600)
        files[role] = CertFiles(cert=cert_path, key=key_path, bundle=bundle)
    return files
