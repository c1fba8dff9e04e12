"""The session CA and its leaves carry exactly the extensions the design names."""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress

import pytest
from _pki_tls import server_verdict_on_client
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pki import issue
from pki.issue import BACKDATE_S, issue_leaf, new_ca
from pki.spiffe import SessionIdentity, SpiffeIdError

NOW = dt.datetime(2026, 11, 29, 8, 0, tzinfo=dt.UTC)
TD = "test.sharness.test"


def test_ca_extensions() -> None:
    key, ca = new_ca(TD, 3600, NOW)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp256r1"
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca and basic.value.path_length == 0
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical
    assert usage.value.key_cert_sign and usage.value.crl_sign
    assert not usage.value.digital_signature
    names = ca.extensions.get_extension_for_class(x509.NameConstraints)
    assert names.critical
    assert names.value.permitted_subtrees == [x509.UniformResourceIdentifier(TD)]
    assert names.value.excluded_subtrees == [
        x509.DNSName(""),
        x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")),
        x509.IPAddress(ipaddress.ip_network("::/0")),
    ]
    assert ca.subject == ca.issuer
    ca.verify_directly_issued_by(ca)


def test_ca_validity_is_ttl_with_backdating() -> None:
    _, ca = new_ca(TD, 3600, NOW)
    assert ca.not_valid_before_utc == NOW - dt.timedelta(seconds=BACKDATE_S)
    assert ca.not_valid_after_utc == NOW + dt.timedelta(seconds=3600)


def test_naive_now_is_utc() -> None:
    _, ca = new_ca(TD, 60, NOW.replace(tzinfo=None))
    assert ca.not_valid_after_utc == NOW + dt.timedelta(seconds=60)


@pytest.mark.parametrize("ttl", [0, -1])
def test_ca_ttl_must_be_positive(ttl: int) -> None:
    with pytest.raises(ValueError, match="ttl_s must be positive"):
        new_ca(TD, ttl, NOW)


def test_ca_trust_domain_validated() -> None:
    with pytest.raises(SpiffeIdError):
        new_ca("Not Valid", 60, NOW)


def test_leaf_extensions() -> None:
    ca_key, ca = new_ca(TD, 3600, NOW)
    ident = SessionIdentity(TD, "0123abcd", "net")
    key, leaf = issue_leaf(ca_key, ca, ident, NOW, 600)
    assert key.public_key() == leaf.public_key()
    leaf.verify_directly_issued_by(ca)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert list(san) == [x509.UniformResourceIdentifier(ident.uri())]
    basic = leaf.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and not basic.value.ca
    usage = leaf.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.digital_signature
    assert not (usage.value.key_encipherment or usage.value.key_cert_sign)
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    aki = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert aki.key_identifier == ski.digest


def test_leaf_validity_clipped_to_ca() -> None:
    ca_key, ca = new_ca(TD, 100, NOW)
    ident = SessionIdentity(TD, "0123abcd", "app")
    _, leaf = issue_leaf(ca_key, ca, ident, NOW + dt.timedelta(seconds=10), 3600)
    assert leaf.not_valid_before_utc == NOW - dt.timedelta(seconds=BACKDATE_S) + dt.timedelta(seconds=10)
    assert leaf.not_valid_after_utc == ca.not_valid_after_utc
    _, early = issue_leaf(ca_key, ca, ident, NOW - dt.timedelta(seconds=20), 60)
    assert early.not_valid_before_utc == ca.not_valid_before_utc


def test_leaf_outside_ca_refused() -> None:
    ca_key, ca = new_ca(TD, 100, NOW)
    ident = SessionIdentity(TD, "0123abcd", "app")
    with pytest.raises(ValueError, match="outside the CA's"):
        issue_leaf(ca_key, ca, ident, NOW + dt.timedelta(seconds=200), 60)
    with pytest.raises(ValueError, match="ttl_s must be positive"):
        issue_leaf(ca_key, ca, ident, NOW, 0)


def test_every_leaf_has_a_fresh_key_and_serial() -> None:
    ca_key, ca = new_ca(TD, 3600, NOW)
    ident = SessionIdentity(TD, "0123abcd", "app")
    (k1, c1), (k2, c2) = (issue_leaf(ca_key, ca, ident, NOW, 60) for _ in range(2))
    assert k1.private_numbers() != k2.private_numbers()
    assert c1.serial_number != c2.serial_number


def _leaf_with(ca_key: issue.PrivateKey, ca: x509.Certificate, **changes: object) -> tuple:
    ident = SessionIdentity(TD, "0123abcd", "app")
    spec = dataclasses.replace(issue.leaf_spec(ca, ident, dt.datetime.now(dt.UTC), 600), **changes)  # type: ignore[arg-type]
    key = issue.new_key()
    return key, issue.sign_leaf(spec, key, ca_key, ca.subject)


HOSTLIKE_SUBJECT = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fs.sharness.test")])
URI = f"spiffe://{TD}/session/0123abcd/app"


@pytest.mark.parametrize(
    ("changes", "openssl_says"),
    [
        ({}, "OK"),
        # OpenSSL compares the URI's host case-insensitively and ignores a port: check_svid refuses both.
        ({"uris": (URI.replace(TD, TD.upper()),)}, "OK"),
        ({"uris": (f"spiffe://{TD}:443/session/0123abcd/app",)}, "OK"),
        ({"uris": ("spiffe://other.sharness.test/session/0123abcd/app",)}, "permitted subtree violation"),
        ({"uris": (f"spiffe://sub.{TD}/session/0123abcd/app",)}, "permitted subtree violation"),
        ({"uris": (URI, "spiffe://other.sharness.test/x")}, "permitted subtree violation"),
        ({"uris": (f"spiffe:{TD}/x",)}, "unsupported or invalid name syntax"),
        ({"dns_names": ("localhost",)}, "excluded subtree violation"),
        ({"uris": (), "dns_names": ("fs.sharness.test",)}, "excluded subtree violation"),
        # A host-like CN (with a dot) is checked against DNS constraints: leaf CNs are bare role names.
        (
            {"subject": x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fs.sharness.test")])},
            "excluded subtree violation",
        ),
    ],
)
def test_what_openssl_enforces_from_the_name_constraints(changes: dict, openssl_says: str) -> None:
    ca_key, ca = new_ca(TD, 3600, dt.datetime.now(dt.UTC))
    server = issue.issue_leaf(ca_key, ca, SessionIdentity(TD, "0123abcd", "fs"), dt.datetime.now(dt.UTC), 600)
    assert server_verdict_on_client(ca, server, _leaf_with(ca_key, ca, **changes)) == openssl_says


def test_openssl_refuses_an_ip_san_beside_the_uri() -> None:
    ca_key, ca = new_ca(TD, 3600, dt.datetime.now(dt.UTC))
    server = issue.issue_leaf(ca_key, ca, SessionIdentity(TD, "0123abcd", "fs"), dt.datetime.now(dt.UTC), 600)
    for address in ("127.0.0.1", "::1"):
        san = x509.SubjectAlternativeName(
            [x509.UniformResourceIdentifier(URI), x509.IPAddress(ipaddress.ip_address(address))]
        )
        client = _leaf_with(ca_key, ca, uris=(), extra=(san,))
        assert server_verdict_on_client(ca, server, client) == "excluded subtree violation"
