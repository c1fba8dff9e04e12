"""verify_audit: each way of tampering with a log is caught, at the right line."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.lifecycle.audit import AuditLog
from launcher.lifecycle.audit_verify import AuditVerdict, head_message, key_fingerprint, line_hash, verify_audit

SID = "0badc0de"


@dataclass(frozen=True)
class Signed:
    log: bytes
    sig: bytes
    pub: bytes
    fingerprint: str

    @property
    def lines(self) -> list[bytes]:
        return self.log.splitlines()

    def verify(self, log: bytes | None = None, sig: bytes | None = b"", pub: bytes | None = b"",
               trusted: bytes | None = None) -> AuditVerdict:
        return verify_audit(self.log if log is None else log, self.sig if sig == b"" else sig,
                            self.pub if pub == b"" else pub, trusted_pub_pem=trusted)


def _join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _write_log(directory: Path, sid: str = SID) -> Signed:
    log = AuditLog.create(str(directory), sid)
    for index in range(6):
        log.append({"event": "net.request", "host": f"h{index}.example", "status": 200})
    sig_path, pem = log.close()
    return Signed(Path(log.path).read_bytes(), Path(sig_path).read_bytes(), pem.encode(), log.fingerprint)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return _write_log(tmp_path_factory.mktemp("audit"))  # 8 lines: open, 6 events, close


def _reforge(lines: list[bytes], edit_at: int) -> list[bytes]:
    """What an attacker without the key can do: edit a line and recompute every later prev."""
    records = [json.loads(line) for line in lines]
    records[edit_at - 1]["host"] = "attacker.example"
    out: list[bytes] = []
    for index, record in enumerate(records):
        if index >= edit_at:
            record["prev"] = line_hash(out[-1])
        out.append(json.dumps(record, separators=(",", ":")).encode())
    return out


def _sign(lines: list[bytes], key: Ed25519PrivateKey, sid: str = SID) -> bytes:
    head = line_hash(lines[-1])
    doc = {"format": "sharness-audit-v1", "alg": "Ed25519", "sid": sid, "seq": len(lines), "head": head,
           "signature": base64.b64encode(key.sign(head_message(sid, len(lines), head))).decode()}
    return json.dumps(doc).encode()


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def test_an_untouched_log_is_intact(signed: Signed) -> None:
    verdict = signed.verify()
    assert verdict == AuditVerdict(True, None, "intact", lines=8, signer=signed.fingerprint, sid=SID,
                                   anchor="directory")
    assert verdict.describe() == (f"intact, 0 events lost (session {SID}, 8 lines, signed by "
                                  f"{signed.fingerprint}; unverified key: only the directory's audit.pub vouches "
                                  "for it)")
    assert signed.verify(pub=None, trusted=signed.pub).intact


def test_an_intact_log_counts_what_its_audit_lost_lines_say_was_lost(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), SID)
    log.append({"event": "door.event", "role": "fs", "op": "stat"})
    log.append({"event": "audit.lost", "role": "fs", "count": 12})
    log.append({"event": "audit.lost", "role": "net", "count": 1})
    log.append({"event": "audit.lost", "role": "fs", "count": 3})
    log.append({"event": "door.event", "role": "fs", "count": 99})  # another event's count is no loss
    sig_path, pem = log.close()
    raw = Path(log.path).read_bytes()
    verdict = verify_audit(raw, Path(sig_path).read_bytes(), pem.encode())
    assert (verdict.intact, verdict.lost, verdict.lost_by_role) == (True, 16, {"fs": 15, "net": 1})
    assert verdict.describe().startswith(f"intact, 16 events lost: fs 15, net 1 (session {SID}, 7 lines, signed by "
                                         f"{log.fingerprint}; unverified key")
    # The count is inside the chain: lowering it is an edit like any other.
    edited = raw.replace(b'"count":12', b'"count":0')
    assert verify_audit(edited, Path(sig_path).read_bytes(), pem.encode()).broken_at == 3


def test_an_edited_line_is_named(signed: Signed) -> None:
    lines = signed.lines
    lines[3] = lines[3].replace(b"h2.example", b"h9.example")
    verdict = signed.verify(_join(lines))
    assert (verdict.intact, verdict.broken_at) == (False, 4)
    assert "line 4 was edited" in verdict.reason


def test_an_edited_last_line_breaks_the_signed_head(signed: Signed) -> None:
    lines = signed.lines
    lines[-1] = lines[-1].replace(b'"lines":8', b'"lines":80')
    assert signed.verify(_join(lines)).broken_at == 8


def test_a_deleted_line_is_named(signed: Signed) -> None:
    lines = signed.lines
    del lines[4]
    verdict = signed.verify(_join(lines))
    assert verdict.broken_at == 5 and "deleted or inserted" in verdict.reason


def test_a_deleted_first_line_is_named(signed: Signed) -> None:
    assert signed.verify(_join(signed.lines[1:])).broken_at == 1


def test_an_inserted_line_is_caught_at_the_line_after_it(signed: Signed) -> None:
    lines = signed.lines
    # The forger chains the new line 3 to line 2; the old line 3, now line 4, gives it away.
    record = {"seq": 3, "ts": "2026-01-01T00:00:00Z", "event": "net.request", "prev": line_hash(lines[1])}
    lines.insert(2, json.dumps(record).encode())
    verdict = signed.verify(_join(lines))
    assert verdict.broken_at == 4 and "inserted before it" in verdict.reason


def test_a_deleted_tail_breaks_at_the_first_missing_line(signed: Signed) -> None:
    verdict = signed.verify(_join(signed.lines[:5]))
    assert (verdict.broken_at, verdict.reason) == (6, "tail deleted: the signed head is line 8, the log ends at 5")


def test_a_removed_signature_is_broken(signed: Signed) -> None:
    verdict = signed.verify(sig=None)
    assert verdict.broken_at == 8 and "no signature" in verdict.reason


def test_a_removed_public_key_needs_pubkey(signed: Signed) -> None:
    assert "audit.pub is missing" in signed.verify(pub=None).reason


def test_a_reforged_chain_fails_the_old_signature(signed: Signed) -> None:
    forged = _join(_reforge(signed.lines, edit_at=3))
    verdict = signed.verify(forged)
    assert verdict.broken_at == 8 and "re-forged" in verdict.reason


def test_a_reforged_chain_signed_with_a_new_key(signed: Signed) -> None:
    forger = Ed25519PrivateKey.generate()
    lines = _reforge(signed.lines, edit_at=3)
    forged, sig = _join(lines), _sign(lines, forger)
    # Without the session's key from the launcher's record, a forger who also replaces audit.pub passes...
    verdict = signed.verify(forged, sig, _pem(forger))
    assert verdict.intact and verdict.signer == key_fingerprint(forger.public_key()) != signed.fingerprint
    # ...and is caught with --pubkey, whether audit.pub was replaced or not.
    assert signed.verify(forged, sig, _pem(forger), trusted=signed.pub).broken_at == 1
    kept_pub = signed.verify(forged, sig, signed.pub)
    assert kept_pub.broken_at == 8 and "does not verify" in kept_pub.reason
    assert signed.verify(forged, sig, None, trusted=signed.pub).broken_at == 8


def test_lines_appended_after_the_signed_head(signed: Signed) -> None:
    lines = signed.lines
    record = {"seq": 9, "ts": "2026-01-01T00:00:00Z", "event": "late", "prev": line_hash(lines[-1])}
    lines.append(json.dumps(record).encode())
    verdict = signed.verify(_join(lines))
    assert verdict.broken_at == 9 and "appended after the signed head" in verdict.reason


def test_a_signature_from_another_session(signed: Signed, tmp_path: Path) -> None:
    other = _write_log(tmp_path, sid="feedf00d")
    assert signed.verify(sig=other.sig, pub=other.pub).broken_at == 1


@pytest.mark.parametrize(
    ("log", "line", "reason"),
    [
        (b"", 1, "empty"),
        (b'{"seq":1}\n{"seq":2', 2, "no newline"),
        (b"not json\n", 1, "not a JSON line"),
        (b"[1]\n", 1, "not a JSON object"),
        (b'{"seq":1,"event":"x","prev":"00"}\n', 1, "not the audit.open line"),
    ],
)
def test_malformed_logs(signed: Signed, log: bytes, line: int, reason: str) -> None:
    verdict = signed.verify(log)
    assert verdict.broken_at == line and reason in verdict.reason


def test_a_malformed_signature(signed: Signed) -> None:
    assert "not a signature document" in signed.verify(sig=b"{}").reason
    assert "not a PEM public key" in signed.verify(pub=b"junk").reason


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_changed_byte_is_caught(signed: Signed, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(signed.log) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != signed.log[position]))
    tampered = signed.log[:position] + bytes([new]) + signed.log[position + 1 :]
    verdict = signed.verify(tampered)
    assert not verdict.intact
    line_of_change = signed.log[:position].count(b"\n") + 1
    assert verdict.broken_at is not None and verdict.broken_at <= max(line_of_change, 1) + 1


def test_a_key_the_registry_holds_is_said_and_a_log_of_another_session_is_refused(signed: Signed) -> None:
    anchored = verify_audit(signed.log, signed.sig, signed.pub, trusted_pub_pem=signed.pub, anchor="the registry",
                            expected_sid=SID)
    assert anchored.intact
    assert anchored.describe().endswith(f"signed by {signed.fingerprint}, the key the registry holds)")
    copied = verify_audit(signed.log, signed.sig, signed.pub, trusted_pub_pem=signed.pub, anchor="the registry",
                          expected_sid="0123abcd")
    assert (copied.intact, copied.broken_at) == (False, 1)
    assert copied.reason == (f"the log is session {SID}'s, in the directory of session 0123abcd (another "
                             "session's log copied under this one's id)")


def test_a_log_cut_and_resigned_with_a_new_key_is_broken_against_the_registered_key(signed: Signed) -> None:
    lines = signed.lines[:5]
    forger = Ed25519PrivateKey.generate()
    cut = _join(lines)
    resigned = _sign(lines, forger)
    assert verify_audit(cut, resigned, _pem(forger)).intact  # the directory alone vouches: "unverified key"
    verdict = verify_audit(cut, resigned, _pem(forger), trusted_pub_pem=signed.pub, anchor="the registry")
    assert not verdict.intact and verdict.reason.startswith("audit.pub is not the session's key (the registry holds")
