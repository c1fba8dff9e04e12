"""The session CA and its leaves carry exactly the extensions the design names."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

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
    assert names.value.excluded_subtrees is None
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
