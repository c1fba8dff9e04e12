"""Check a peer's X.509-SVID after the handshake (sans-IO): OpenSSL checks the chain, we check the rest.

OpenSSL does not enforce the one-URI-SAN rule, the trust domain, the session or the role: these are ours.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID

from pki.issue import LEAF_KEY_USAGE
from pki.spiffe import SessionIdentity, SpiffeIdError, parse_spiffe_id

_NEEDED_EKU = {ExtendedKeyUsageOID.SERVER_AUTH: "serverAuth", ExtendedKeyUsageOID.CLIENT_AUTH: "clientAuth"}
_SAN_KINDS: dict[type, str] = {
    x509.DNSName: "DNS name",
    x509.IPAddress: "IP address",
    x509.RFC822Name: "email address",
    x509.DirectoryName: "directory name",
    x509.RegisteredID: "registered ID",
    x509.OtherName: "other name",
}


@dataclass(frozen=True)
class SvidVerdict:
    """Accepted with the peer's identity, or refused with a short specific reason."""

    ok: bool
    identity: SessionIdentity | None
    reason: str


def _refuse(reason: str) -> SvidVerdict:
    return SvidVerdict(False, None, f"peer SVID refused: {reason}")


def _extension(cert: x509.Certificate, kind: type[x509.ExtensionType]) -> x509.Extension | None:
    try:
        return cert.extensions.get_extension_for_class(kind)
    except x509.ExtensionNotFound:
        return None


def _san_kind(name: x509.GeneralName) -> str:
    return _SAN_KINDS.get(type(name), type(name).__name__)


def _check_uri(cert: x509.Certificate) -> str | SvidVerdict:
    """Exactly one URI SAN and nothing else in the SAN; return that URI or the refusal."""
    ext = _extension(cert, x509.SubjectAlternativeName)
    names = list(ext.value) if ext is not None else []
    uris = [n.value for n in names if isinstance(n, x509.UniformResourceIdentifier)]
    others = sorted({_san_kind(n) for n in names if not isinstance(n, x509.UniformResourceIdentifier)})
    if others and not uris:
        return _refuse(f"SAN holds only {', '.join(others)}, no URI SAN")
    if others:
        return _refuse(f"SAN holds {', '.join(others)} beside the URI (only one URI allowed)")
    if not uris:
        return _refuse("no URI SAN")
    if len(uris) > 1:
        return _refuse(f"{len(uris)} URI SANs (exactly one allowed)")
    return str(uris[0])


def _check_constraints(cert: x509.Certificate) -> SvidVerdict | None:
    """A leaf: cA=false, KeyUsage exactly digitalSignature (critical), EKU serverAuth+clientAuth."""
    basic = _extension(cert, x509.BasicConstraints)
    if basic is None:
        return _refuse("BasicConstraints missing")
    if basic.value.ca:
        return _refuse("certificate is a CA (cA=true), not a leaf")
    usage = _extension(cert, x509.KeyUsage)
    if usage is None:
        return _refuse("KeyUsage missing")
    if not usage.critical:
        return _refuse("KeyUsage not critical")
    if usage.value != LEAF_KEY_USAGE:
        return _refuse("KeyUsage must be digitalSignature only")
    eku = _extension(cert, x509.ExtendedKeyUsage)
    if eku is None:
        return _refuse("ExtendedKeyUsage missing")
    missing = [name for oid, name in _NEEDED_EKU.items() if oid not in eku.value]
    if missing:
        return _refuse(f"ExtendedKeyUsage lacks {' and '.join(missing)}")
    return None


def _check_time(cert: x509.Certificate, now: dt.datetime) -> SvidVerdict | None:
    now = now if now.tzinfo is not None else now.replace(tzinfo=dt.UTC)
    if now < cert.not_valid_before_utc:
        return _refuse(f"not yet valid (from {cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ})")
    if now > cert.not_valid_after_utc:
        return _refuse(f"expired at {cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}")
    return None


def _check_identity(
    uri: str, trust_domain: str, session_id: str, expected_role: str | None
) -> SessionIdentity | SvidVerdict:
    try:
        spiffe_id = parse_spiffe_id(uri)
    except SpiffeIdError as exc:
        return _refuse(f"URI SAN is not a SPIFFE ID ({exc})")
    if spiffe_id.trust_domain != trust_domain:
        return _refuse(f"trust domain {spiffe_id.trust_domain!r}, expected {trust_domain!r}")
    try:
        identity = SessionIdentity.from_spiffe_id(spiffe_id)
    except SpiffeIdError as exc:
        return _refuse(str(exc))
    if identity.session_id != session_id:
        return _refuse(f"session {identity.session_id}, expected {session_id}")
    if expected_role is not None and identity.role != expected_role:
        return _refuse(f"role {identity.role!r}, expected {expected_role!r}")
    return identity


def check_svid(
    cert: x509.Certificate | bytes,
    *,
    trust_domain: str,
    session_id: str,
    now: dt.datetime,
    expected_role: str | None = None,
    ca_cert: x509.Certificate | None = None,
) -> SvidVerdict:
    """Accept only a conformant leaf of this trust domain and session (and role, when given).

    `cert` is a certificate or its DER bytes. With `ca_cert`, also require that it signed `cert`
    (the TLS handshake already checks the chain; this is for callers that have no handshake).
    """
    if isinstance(cert, bytes | bytearray | memoryview):
        try:
            cert = x509.load_der_x509_certificate(bytes(cert))
        except ValueError:
            return _refuse("not a DER certificate")
    uri = _check_uri(cert)
    if isinstance(uri, SvidVerdict):
        return uri
    refusal = _check_constraints(cert) or _check_time(cert, now)
    if refusal is not None:
        return refusal
    if ca_cert is not None:
        try:
            cert.verify_directly_issued_by(ca_cert)
        except (ValueError, TypeError, InvalidSignature):
            return _refuse("not signed by this session's CA")
    identity = _check_identity(uri, trust_domain, session_id, expected_role)
    if isinstance(identity, SvidVerdict):
        return identity
    return SvidVerdict(True, identity, f"peer SVID accepted: {identity.uri()}")
