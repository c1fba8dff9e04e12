"""Identity attacks, run by attack_app.py inside the session: certificates the fs door must refuse.

The app dials the fs door (an edge it has) with a self-signed SVID, a leaf from a forged CA that copies the
session CA's name and key identifier, another session's real SVID, and no certificate at all. It reports
how each ended; the tests decide whether the door refused in its handshake (alert) or with a 403.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from doors._transport import client_context, client_context_from_file
from doors.client import Dial, DoorClient, DoorNotTrusted, DoorRefused, DoorUnavailable
from pki.issue import LEAF_EKU, LEAF_KEY_USAGE, ca_name

Report = Callable[..., None]


def _pem(key: ec.EllipticCurvePrivateKey, *certs: x509.Certificate) -> bytes:
    body = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    return body + b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certs)


def _leaf(key: ec.EllipticCurvePrivateKey, uri: str, issuer: x509.Name, issuer_key: ec.EllipticCurvePrivateKey,
          authority_ski: bytes) -> x509.Certificate:
    """A leaf shaped exactly like the launcher's (one URI SAN, digitalSignature, both EKUs)."""
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "app")])
    return (
        x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(LEAF_KEY_USAGE, critical=True)
        .add_extension(x509.ExtendedKeyUsage(list(LEAF_EKU)), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier(authority_ski, None, None), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=False)
        .sign(issuer_key, hashes.SHA256())
    )


def _forged_ca(real: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    """A CA with the real session CA's subject, validity and subject key identifier, but our own key."""
    builder = (
        x509.CertificateBuilder().subject_name(real.subject).issuer_name(real.subject).public_key(key.public_key())
        .serial_number(real.serial_number)
        .not_valid_before(real.not_valid_before_utc).not_valid_after(real.not_valid_after_utc)
    )
    for extension in real.extensions:
        builder = builder.add_extension(extension.value, critical=extension.critical)
    return builder.sign(key, hashes.SHA256())


def _self_signed(uri: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key()).digest
    return _pem(key, _leaf(key, uri, x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "app")]), key, ski))


def _forged_chain(uri: str, bundle: bytes, trust_domain: str) -> bytes:
    real = x509.load_pem_x509_certificate(bundle)
    assert real.subject == ca_name(trust_domain)
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ski = real.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    return _pem(leaf_key, _leaf(leaf_key, uri, real.subject, ca_key, ski), _forged_ca(real, ca_key))


def _dial(report: Report, probe: str, bundle: bytes, pem: bytes | None) -> None:
    """GET /v0/hello on the fs door presenting `pem` (key + chain), or no certificate at all."""
    env = os.environ
    ctx = client_context(bundle)
    if pem is not None:  # whichever TLS backend the transport uses, it loads a key+chain file
        path = Path(env["TMPDIR"], f"{probe}.pem")
        path.write_bytes(pem)
        ctx = client_context_from_file(bundle, path)
    client = DoorClient(Dial("fs", env["SHARNESS_DOOR_FS"], ctx, env["SHARNESS_TRUST_DOMAIN"],
                             env["SHARNESS_SESSION"], "app"))
    try:
        with client:
            answer = client.hello()
        report(probe, outcome="answered", role=answer.get("role"))
    except DoorRefused as refused:
        refusal = refused.refusal
        report(probe, outcome="refused", who=refusal.who, reason=refusal.detail, row=refusal.row)
    except (DoorNotTrusted, DoorUnavailable) as exc:
        report(probe, outcome=type(exc).__name__, detail=str(exc)[:300])


def run(targets: dict[str, Any], report: Report) -> None:
    """Every identity attack in turn."""
    env = os.environ
    bundle = Path(env["SHARNESS_BUNDLE"]).read_bytes()
    uri = f"spiffe://{env['SHARNESS_TRUST_DOMAIN']}/session/{env['SHARNESS_SESSION']}/app"
    _dial(report, "identity.control_own_svid", bundle, Path(env["SHARNESS_SVID"]).read_bytes())
    _dial(report, "identity.self_signed", bundle, _self_signed(uri))
    _dial(report, "identity.forged_ca", bundle, _forged_chain(uri, bundle, env["SHARNESS_TRUST_DOMAIN"]))
    _dial(report, "identity.other_session_svid", bundle, Path(targets["other_svid"]).read_bytes())
    _dial(report, "identity.no_certificate", bundle, None)
