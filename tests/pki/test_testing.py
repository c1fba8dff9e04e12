"""SessionPKI.odd_leaf: each kind differs from the conformant leaf in exactly the one thing it names."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from pki.testing import ODD_KINDS, SessionPKI
from pki.vocabulary import ROLES

DIFFERS_IN = {
    "expired": {"validity"},
    "not_yet_valid": {"validity"},
    "two_uris": {"san"},
    "no_uri": {"san"},
    "dns_only": {"san"},
    "ca_flag": {"ca"},
    "wrong_eku": {"eku"},
    "wrong_key_usage": {"key_usage"},
    "other_trust_domain": {"san"},
    "other_session": {"san"},
    "self_signed": {"issuer", "signer"},
    "other_ca": {"signer"},
}


@pytest.fixture(scope="module")
def spki() -> SessionPKI:
    return SessionPKI.create()


def _ext(cert: x509.Certificate, kind: type[x509.ExtensionType]) -> object:
    try:
        return cert.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None


def _traits(cert: x509.Certificate, ca_cert: x509.Certificate) -> dict[str, object]:
    try:
        cert.verify_directly_issued_by(ca_cert)
        signer = "session CA"
    except (ValueError, InvalidSignature):
        signer = "someone else"
    basic = _ext(cert, x509.BasicConstraints)
    return {
        "validity": (cert.not_valid_before_utc, cert.not_valid_after_utc),
        "san": _ext(cert, x509.SubjectAlternativeName),
        "ca": basic.ca if isinstance(basic, x509.BasicConstraints) else None,
        "eku": _ext(cert, x509.ExtendedKeyUsage),
        "key_usage": _ext(cert, x509.KeyUsage),
        "issuer": cert.issuer,
        "subject": cert.subject,
        "signer": signer,
    }


def test_kinds_are_listed() -> None:
    assert set(DIFFERS_IN) == set(ODD_KINDS)


@pytest.mark.parametrize("kind", ODD_KINDS)
def test_exactly_one_thing_is_wrong(spki: SessionPKI, kind: str) -> None:
    pem = spki.odd_leaf(kind, "net")
    key = serialization.load_pem_private_key(pem, None)
    (odd,) = x509.load_pem_x509_certificates(pem)
    assert key.public_key() == odd.public_key()
    good, odd_traits = _traits(spki.cert("net"), spki.ca_cert), _traits(odd, spki.ca_cert)
    assert {name for name in good if good[name] != odd_traits[name]} == DIFFERS_IN[kind]


def test_unknown_kind_refused(spki: SessionPKI) -> None:
    with pytest.raises(ValueError, match="is not one of"):
        spki.odd_leaf("slightly_wrong")


def test_create_covers_every_role(spki: SessionPKI) -> None:
    assert set(spki.leaves) == set(ROLES)
    for role in ROLES:
        assert spki.svid_pem(role).startswith(b"-----BEGIN PRIVATE KEY-----")
