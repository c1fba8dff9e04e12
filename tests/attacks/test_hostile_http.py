"""Hostile HTTP to the fs door from inside the session, with the app's valid SVID: each request gets its
status (or a closed connection) and the door answers a clean request right after; nothing escapes."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root

STATUS = {
    "huge_header": 431, "many_headers": 431, "huge_target": 414,
    "cl_te": 400, "te_cl": 400, "two_lengths": 400, "bad_chunk": 400, "negative_length": 400,
    "nul_in_header": 400, "absolute_form": 400, "connect_method": 400, "http09": 400, "garbage": 400,
    # h11 accepts these (RFC 9112 lets a server take a bare LF; obs-fold is joined): no second parser sits
    # between the app and the door, so neither can desynchronise anything. Asserted as they are.
    "bare_lf": 200, "obs_fold": 200,
}
TRAVERSAL_STATUS = {400, 403, 404}


@pytest.mark.parametrize("case", sorted(STATUS))
def test_a_malformed_request_gets_its_status_and_the_door_answers_the_next(attacks: AttackRun, case: str) -> None:
    seen = attacks.a.probes[f"http.{case}"]
    assert (seen["status"], seen["after"], seen["leaked"]) == (STATUS[case], 200, False), seen


def test_no_smuggled_or_half_framed_write_landed(attacks: AttackRun) -> None:
    names = {path.name for path in attacks.workspace_a.iterdir()}
    assert not names & {"smuggled.txt", "clte.txt", "tecl.txt", "twocl.txt", "chunk.txt", "neg.txt", "slow.txt"}


def test_traversal_encodings_never_leave_the_workspace(attacks: AttackRun) -> None:
    """%2f, %2e, %5c, double encoding, overlong UTF-8, NUL, and symlinks to /etc/passwd and /etc seeded in
    the workspace: 400 (malformed), 403 (within_root) or 404 (a literal name), never a byte of /etc/passwd."""
    seen = {name: p for name, p in attacks.a.probes.items() if name.startswith("http.traversal.")}
    assert len(seen) == 13
    for probe in seen.values():
        assert probe["status"] in TRAVERSAL_STATUS and not probe["leaked"] and probe["after"] == 200, probe
    assert seen["http.traversal.8"]["status"] == 403 and seen["http.traversal.9"]["status"] == 403  # symlinks out
    assert seen["http.traversal.put"]["status"] == 403
    assert not (attacks.root / "escaped.txt").exists()


def test_slow_body_and_slow_head_are_cut_while_the_door_serves_others(attacks: AttackRun) -> None:
    probes = attacks.a.probes
    assert (probes["http.slow_body"]["status"], probes["http.slow_body"]["after"]) == (408, 200)
    assert (probes["http.slow_head"]["status"], probes["http.slow_head"]["error"]) == (408, "http.head_timeout_s")
    assert probes["http.while_slow_held"]["status"] == 200


def test_not_tls_and_old_tls_are_refused(attacks: AttackRun) -> None:
    probes = attacks.a.probes
    assert (probes["http.plaintext"]["status"], probes["http.plaintext"]["after"]) == (None, 200)
    assert probes["http.tls12"]["outcome"] == "TLSV1_ALERT_PROTOCOL_VERSION" and probes["http.tls12"]["after"] == 200


def test_a_connection_flood_is_capped_and_the_door_recovers(attacks: AttackRun) -> None:
    """300 idle connections: beyond the app's share (half the door's 256) each is closed at once and audited."""
    assert attacks.a.probes["http.flood"]["opened"] == 300
    assert attacks.a.probes["http.flood_after"]["after"] == 200
    capacity = [e for e in attacks.audit(attacks.sid_a) if e.get("stage") == "capacity"]
    assert capacity and all(e["door"] == "fs" and "holds 128 connections, its share of the door" in e["reason"]
                            for e in capacity)


def test_the_fs_door_lived_through_it_all(attacks: AttackRun) -> None:
    assert attacks.a.probes["http.final_hello"]["status"] == 200 and attacks.a.probes["http.exit"]["code"] == 0
    ends = {e["role"]: e["wait_status"] for e in attacks.audit(attacks.sid_a) if e["event"] == "process.end"}
    assert ends == {"app": 0, "fs": 0, "keys": 0}  # stopped by the launcher at the end, not crashed
    assert attacks.summary_a["reason"] == "app exited with code 0"
