"""Build the session CA and its X.509-SVIDs with cryptography. Pure: no fork, no files, no clock.

The caller passes `now`; every certificate is backdated by BACKDATE_S so that a peer whose clock is a
little behind still accepts it (see docs/decisions/pki.md).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pki.spiffe import SessionIdentity, validate_trust_domain

BACKDATE_S = 30
CURVE = ec.SECP256R1()

PrivateKey = ec.EllipticCurvePrivateKey

LEAF_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)
CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=False,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)
LEAF_EKU = (ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH)


def new_key() -> PrivateKey:
    """A fresh private key on the session curve."""
    return ec.generate_private_key(CURVE)


def _aware(now: dt.datetime) -> dt.datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=dt.UTC)


def ca_name(trust_domain: str) -> x509.Name:
    """The CA's subject; the CN has no dot so OpenSSL never reads it as a host name."""
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sharness"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, trust_domain),
            x509.NameAttribute(NameOID.COMMON_NAME, "sharness session CA"),
        ]
    )


def name_constraints(trust_domain: str) -> x509.NameConstraints:
    """Permit URIs whose host is exactly the trust domain; exclude every DNS name and IP address.

    The URI subtree is the RFC 5280 host form (`td`, not `spiffe://td`, which OpenSSL matches against
    nothing). A URI subtree alone leaves DNS/IP SANs and a host-like CN unconstrained, hence the exclusions.
    """
    return x509.NameConstraints(
        permitted_subtrees=[x509.UniformResourceIdentifier(trust_domain)],
        excluded_subtrees=[
            x509.DNSName(""),
            x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")),
            x509.IPAddress(ipaddress.ip_network("::/0")),
        ],
    )


def new_ca(trust_domain: str, ttl_s: int, now: dt.datetime) -> tuple[PrivateKey, x509.Certificate]:
    """Self-signed session CA: pathLen 0, keyCertSign+cRLSign, name-constrained to the trust domain."""
    validate_trust_domain(trust_domain)
    if ttl_s <= 0:
        raise ValueError(f"CA ttl_s must be positive, got {ttl_s}")
    now = _aware(now)
    key = new_key()
    name = ca_name(trust_domain)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(seconds=BACKDATE_S))
        .not_valid_after(now + dt.timedelta(seconds=ttl_s))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(CA_KEY_USAGE, critical=True)
        .add_extension(name_constraints(trust_domain), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    return key, builder.sign(key, hashes.SHA256())


@dataclass(frozen=True)
class LeafSpec:
    """Everything that goes into one leaf; `testing.odd_leaf` bends exactly one field of it."""

    subject: x509.Name
    uris: tuple[str, ...]
    not_before: dt.datetime
    not_after: dt.datetime
    dns_names: tuple[str, ...] = ()
    ca: bool = False
    key_usage: x509.KeyUsage = LEAF_KEY_USAGE
    eku: tuple[x509.ObjectIdentifier, ...] = LEAF_EKU
    extra: tuple[x509.ExtensionType, ...] = field(default=())


def leaf_spec(ca_cert: x509.Certificate, identity: SessionIdentity, now: dt.datetime, ttl_s: int) -> LeafSpec:
    """The conformant leaf for `identity`, its validity clipped to the CA's."""
    if ttl_s <= 0:
        raise ValueError(f"leaf ttl_s must be positive, got {ttl_s}")
    now = _aware(now)
    not_before = max(now - dt.timedelta(seconds=BACKDATE_S), ca_cert.not_valid_before_utc)
    not_after = min(now + dt.timedelta(seconds=ttl_s), ca_cert.not_valid_after_utc)
    if not_after <= not_before:
        raise ValueError("leaf validity falls outside the CA's: mint a new session CA")
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sharness"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"session {identity.session_id}"),
            x509.NameAttribute(NameOID.COMMON_NAME, identity.role),
        ]
    )
    return LeafSpec(subject=subject, uris=(identity.uri(),), not_before=not_before, not_after=not_after)


def sign_leaf(spec: LeafSpec, leaf_key: PrivateKey, issuer_key: PrivateKey, issuer_name: x509.Name) -> x509.Certificate:
    """Sign the certificate `spec` describes for `leaf_key`'s public half."""
    sans: list[x509.GeneralName] = [x509.UniformResourceIdentifier(u) for u in spec.uris]
    sans += [x509.DNSName(d) for d in spec.dns_names]
    builder = (
        x509.CertificateBuilder()
        .subject_name(spec.subject)
        .issuer_name(issuer_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(spec.not_before)
        .not_valid_after(spec.not_after)
        .add_extension(x509.BasicConstraints(ca=spec.ca, path_length=None), critical=True)
        .add_extension(spec.key_usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage(list(spec.eku)), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    for ext in spec.extra:
        builder = builder.add_extension(ext, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def issue_leaf(
    ca_key: PrivateKey, ca_cert: x509.Certificate, identity: SessionIdentity, now: dt.datetime, ttl_s: int
) -> tuple[PrivateKey, x509.Certificate]:
    """A fresh key and its X.509-SVID: one URI SAN, cA=false, digitalSignature, serverAuth+clientAuth."""
    leaf_key = new_key()
    spec = leaf_spec(ca_cert, identity, now, ttl_s)
    return leaf_key, sign_leaf(spec, leaf_key, ca_key, ca_cert.subject)
