"""check_svid accepts only conformant leaves of this trust domain and session, with specific reasons."""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from pki.issue import LeafSpec, leaf_spec, new_key, sign_leaf
from pki.svid import SvidVerdict, check_svid
from pki.testing import ODD_KINDS, SessionPKI
from pki.vocabulary import ROLES

TD = "test.sharness.test"
SID = "0123abcd"


@pytest.fixture(scope="module")
def spki() -> SessionPKI:
    return SessionPKI.create(TD, SID)


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem[pem.index(b"-----BEGIN CERTIFICATE") :])


def _check(cert: x509.Certificate | bytes, spki: SessionPKI, **kw: object) -> SvidVerdict:
    kw.setdefault("now", dt.datetime.now(dt.UTC))
    return check_svid(cert, trust_domain=TD, session_id=SID, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("role", ROLES)
def test_every_role_accepted(spki: SessionPKI, role: str) -> None:
    verdict = _check(spki.cert(role), spki, expected_role=role, ca_cert=spki.ca_cert)
    assert verdict.ok
    assert verdict.identity == spki.identity(role)
    assert spki.identity(role).uri() in verdict.reason


def test_der_bytes_accepted(spki: SessionPKI) -> None:
    der = spki.cert("fs").public_bytes(serialization.Encoding.DER)
    assert _check(der, spki).identity == spki.identity("fs")


def test_garbage_bytes_refused(spki: SessionPKI) -> None:
    verdict = _check(b"not a certificate", spki)
    assert not verdict.ok
    assert verdict.identity is None
    assert "not a DER certificate" in verdict.reason


REASONS = {
    "expired": "expired at",
    "not_yet_valid": "not yet valid",
    "two_uris": "2 URI SANs (exactly one allowed)",
    "no_uri": "no URI SAN",
    "dns_only": "SAN holds only DNS name, no URI SAN",
    "ca_flag": "certificate is a CA (cA=true)",
    "wrong_eku": "ExtendedKeyUsage lacks clientAuth",
    "wrong_key_usage": "KeyUsage must be digitalSignature only",
    "other_trust_domain": "trust domain 'other.sharness.test', expected 'test.sharness.test'",
    "other_session": "session ffffffff, expected 0123abcd",
    "self_signed": "not signed by this session's CA",
    "other_ca": "not signed by this session's CA",
}


def test_reasons_cover_every_kind() -> None:
    assert set(REASONS) == set(ODD_KINDS)


@pytest.mark.parametrize("kind", ODD_KINDS)
def test_odd_leaf_refused_with_its_reason(spki: SessionPKI, kind: str) -> None:
    verdict = _check(_cert(spki.odd_leaf(kind)), spki, ca_cert=spki.ca_cert)
    assert not verdict.ok
    assert verdict.identity is None
    assert verdict.reason.startswith(f"peer SVID refused: {REASONS[kind]}")


@pytest.mark.parametrize("kind", ["self_signed", "other_ca"])
def test_signature_is_only_checked_with_ca_cert(spki: SessionPKI, kind: str) -> None:
    # Without ca_cert the chain is the TLS handshake's job: these two differ only in who signed them.
    assert _check(_cert(spki.odd_leaf(kind)), spki).ok


def test_expected_role_mismatch(spki: SessionPKI) -> None:
    verdict = _check(spki.cert("app"), spki, expected_role="fs")
    assert verdict.reason == "peer SVID refused: role 'app', expected 'fs'"


def test_time_bounds_are_inclusive(spki: SessionPKI) -> None:
    cert = spki.cert("net")
    assert _check(cert, spki, now=cert.not_valid_before_utc).ok
    assert _check(cert, spki, now=cert.not_valid_after_utc).ok
    after = cert.not_valid_after_utc + dt.timedelta(seconds=1)
    assert "expired" in _check(cert, spki, now=after).reason
    before = cert.not_valid_before_utc - dt.timedelta(seconds=1)
    assert "not yet valid" in _check(cert, spki, now=before).reason


def test_naive_now_is_utc(spki: SessionPKI) -> None:
    naive = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert _check(spki.cert("app"), spki, now=naive).ok


def _bent(spki: SessionPKI, **changes: object) -> x509.Certificate:
    spec: LeafSpec = leaf_spec(spki.ca_cert, spki.identity("app"), spki.created, spki.ttl_s)
    key = new_key()
    return sign_leaf(dataclasses.replace(spec, **changes), key, spki.ca_key, spki.ca_cert.subject)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("uris", "reason"),
    [
        (("https://test.sharness.test/session/0123abcd/app",), "URI SAN is not a SPIFFE ID"),
        (("spiffe://test.sharness.test/workload/app",), "is not /session/<sid>/<role>"),
        (("spiffe://test.sharness.test/session/0123abcd/root",), "role 'root' is not one of"),
        (("spiffe://test.sharness.test/session/XYZ/app",), "is not 8 lowercase hex"),
    ],
)
def test_uri_shapes_refused(spki: SessionPKI, uris: tuple[str, ...], reason: str) -> None:
    verdict = _check(_bent(spki, uris=uris), spki)
    assert not verdict.ok
    assert reason in verdict.reason


def test_dns_beside_uri_refused(spki: SessionPKI) -> None:
    verdict = _check(_bent(spki, dns_names=("localhost",)), spki)
    assert verdict.reason == "peer SVID refused: SAN holds DNS name beside the URI (only one URI allowed)"


def test_ip_and_email_beside_uri_refused(spki: SessionPKI) -> None:
    extra = x509.SubjectAlternativeName(
        [
            x509.UniformResourceIdentifier(spki.identity("app").uri()),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.RFC822Name("a@b.test"),
        ]
    )
    cert = _bent(spki, uris=(), extra=(extra,))
    assert "IP address, email address beside the URI" in _check(cert, spki).reason


def test_missing_extensions_refused(spki: SessionPKI) -> None:
    # Built by hand: sign_leaf always adds BasicConstraints, KeyUsage and EKU.
    key = new_key()
    spec = leaf_spec(spki.ca_cert, spki.identity("app"), spki.created, spki.ttl_s)

    def build(skip: type) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(spec.subject)
            .issuer_name(spki.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(1)
            .not_valid_before(spec.not_before)
            .not_valid_after(spec.not_after)
            .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(spec.uris[0])]), False)
        )
        exts: list[tuple[x509.ExtensionType, bool]] = [
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (spec.key_usage, True),
            (x509.ExtendedKeyUsage(list(spec.eku)), False),
        ]
        for ext, critical in exts:
            if not isinstance(ext, skip):
                builder = builder.add_extension(ext, critical)
        return builder.sign(spki.ca_key, hashes.SHA256())

    assert "BasicConstraints missing" in _check(build(x509.BasicConstraints), spki).reason
    assert "KeyUsage missing" in _check(build(x509.KeyUsage), spki).reason
    assert "ExtendedKeyUsage missing" in _check(build(x509.ExtendedKeyUsage), spki).reason
    assert _check(build(type(None)), spki).ok


def test_non_critical_key_usage_refused(spki: SessionPKI) -> None:
    cert = spki.cert("app")
    builder = (
        x509.CertificateBuilder()
        .subject_name(cert.subject)
        .issuer_name(cert.issuer)
        .public_key(cert.public_key())
        .serial_number(2)
        .not_valid_before(cert.not_valid_before_utc)
        .not_valid_after(cert.not_valid_after_utc)
    )
    for ext in cert.extensions:
        critical = False if isinstance(ext.value, x509.KeyUsage) else ext.critical
        builder = builder.add_extension(ext.value, critical)
    bent = builder.sign(spki.ca_key, hashes.SHA256())
    assert _check(bent, spki).reason == "peer SVID refused: KeyUsage not critical"


def test_eku_missing_both_named(spki: SessionPKI) -> None:
    cert = _bent(spki, eku=(ExtendedKeyUsageOID.CODE_SIGNING,))
    assert _check(cert, spki).reason == "peer SVID refused: ExtendedKeyUsage lacks serverAuth and clientAuth"
