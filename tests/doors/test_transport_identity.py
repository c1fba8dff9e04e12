"""The SVID check after every handshake, with each accepted certificate parsed once: nothing it refuses gets in.

The door and the client keep an accepted verdict per certificate (DER), for its trust domain, session and
role; the clock and the edge are checked on every connection. Each test fails if the kept verdict were
reused outside what it was decided for.
"""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from doors._transport._identity import admit_client, check_door, checked_svid
from pki.edges import EdgePolicy
from pki.spiffe import SessionIdentity
from pki.svid import check_svid
from pki.testing import SessionPKI

SECOND = dt.timedelta(seconds=1)


@pytest.fixture(scope="module")
def pki() -> SessionPKI:
    return SessionPKI.create()


def _der(pki: SessionPKI, role: str) -> bytes:
    return pki.cert(role).public_bytes(Encoding.DER)


def _now(pki: SessionPKI) -> dt.datetime:
    return pki.cert("app").not_valid_before_utc + 10 * SECOND


def test_an_accepted_certificate_is_refused_once_it_expired(pki: SessionPKI) -> None:
    der, door = _der(pki, "app"), pki.identity("fs")
    edges = EdgePolicy(frozenset({("app", "fs")}))
    assert admit_client(der, door=door, edge_policy=edges, now=_now(pki)).ok
    after = pki.cert("app").not_valid_after_utc + SECOND
    late = admit_client(der, door=door, edge_policy=edges, now=after)
    assert not late.ok and late.stage == "svid" and "expired at" in late.reason


def test_an_accepted_certificate_is_refused_before_it_is_valid(pki: SessionPKI) -> None:
    der = _der(pki, "app")
    assert checked_svid(der, trust_domain=pki.trust_domain, session_id=pki.session_id, now=_now(pki)).ok
    early = pki.cert("app").not_valid_before_utc - SECOND
    verdict = checked_svid(der, trust_domain=pki.trust_domain, session_id=pki.session_id, now=early)
    assert not verdict.ok and "not yet valid" in verdict.reason


def test_the_edge_is_decided_on_every_connection(pki: SessionPKI) -> None:
    der, door, now = _der(pki, "app"), pki.identity("fs"), _now(pki)
    assert admit_client(der, door=door, edge_policy=EdgePolicy(frozenset({("app", "fs")})), now=now).ok
    refused = admit_client(der, door=door, edge_policy=EdgePolicy(frozenset()), now=now)
    assert not refused.ok and refused.stage == "edge" and "edge app->fs" in refused.reason


def test_a_verdict_is_kept_for_its_own_session_and_trust_domain(pki: SessionPKI) -> None:
    der, now = _der(pki, "app"), _now(pki)
    edges = EdgePolicy(frozenset({("app", "fs")}))
    assert admit_client(der, door=pki.identity("fs"), edge_policy=edges, now=now).ok
    other_session = SessionIdentity(pki.trust_domain, "ffffffff", "fs")
    refused = admit_client(der, door=other_session, edge_policy=edges, now=now)
    assert not refused.ok and "session" in refused.reason
    other_domain = SessionIdentity("elsewhere.test", pki.session_id, "fs")
    assert not admit_client(der, door=other_domain, edge_policy=edges, now=now).ok


def test_a_client_still_refuses_a_door_of_another_role(pki: SessionPKI) -> None:
    der, now = _der(pki, "fs"), _now(pki)
    common = {"trust_domain": pki.trust_domain, "session_id": pki.session_id, "now": now}
    assert check_door(der, dialled="fs", **common).ok
    verdict = check_door(der, dialled="keys", **common)
    assert not verdict.ok and "role 'fs', expected 'keys'" in verdict.reason


def test_a_refusal_keeps_check_svids_words(pki: SessionPKI) -> None:
    for kind in ("two_uris", "other_session", "no_uri"):
        der = x509.load_pem_x509_certificate(pki.odd_leaf(kind)).public_bytes(Encoding.DER)
        common = {"trust_domain": pki.trust_domain, "session_id": pki.session_id, "now": _now(pki)}
        assert checked_svid(der, **common) == check_svid(der, **common)
        assert not checked_svid(der, **common).ok
    assert checked_svid(b"not a certificate", trust_domain=pki.trust_domain, session_id=pki.session_id,
                        now=_now(pki)).reason.endswith("not a DER certificate")
