"""Certificates the app can make or steal, presented to the fs door (an edge it has): the door's TLS refuses
each in the handshake, the client reads the alert in words, and the door audits one refusal each."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root

UNKNOWN_CA = "the door does not trust the CA that signed your certificate (not this session's CA, or self-signed)"
# probe -> (the words the client reads, the door's audited reason)
REFUSED = {
    "identity.self_signed": (UNKNOWN_CA, "client certificate refused by TLS: self-signed certificate"),
    "identity.other_session_svid": (UNKNOWN_CA,
                                    "client certificate refused by TLS: unable to get local issuer certificate"),
    "identity.forged_ca": ("a signature did not verify: your certificate names this session's CA but was not "
                           "signed by it (forged or altered), or it does not match your private key",
                           "client certificate refused by TLS: certificate signature failure"),
    "identity.no_certificate": ("you presented no client certificate; the door requires one",
                                "client presented no certificate"),
}


def test_the_apps_own_svid_is_answered(attacks: AttackRun) -> None:
    assert attacks.a.probes["identity.control_own_svid"] == {
        "probe": "identity.control_own_svid", "outcome": "answered", "role": "fs"}


@pytest.mark.parametrize("probe", sorted(REFUSED))
def test_a_made_or_stolen_certificate_is_refused_in_the_handshake(attacks: AttackRun, probe: str) -> None:
    """Self-signed with the app's SPIFFE ID; a leaf from a CA forged with the session CA's subject, serial,
    extensions and key identifier; session B's real app SVID (the test copied it: a stolen one); none."""
    words, audited = REFUSED[probe]
    assert attacks.a.probes[probe] == {"probe": probe, "outcome": "refused", "who": "fs", "reason": words,
                                       "row": "svid"}
    refusals = [e for e in attacks.audit(attacks.sid_a)
                if e.get("kind") == "transport.refused" and e["reason"] == audited]
    assert len(refusals) == 1, refusals
    assert refusals[0]["door"] == "fs" and refusals[0]["stage"] == "tls" and refusals[0]["client_role"] is None
