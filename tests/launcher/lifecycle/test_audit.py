"""The audit writer: chained structlog lines, a session key only in memory, and no secret in any line."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from doors import fingerprint_of
from launcher.lifecycle.audit import AuditError, AuditLog, AuditRefused, AuditStatistics
from launcher.lifecycle.audit_verify import genesis_hash, line_hash, verify_audit
from pki.vocabulary import AUDIT_ROOT

SID = "0badc0de"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIP3x\n-----END PRIVATE KEY-----\n"


def _lines(log: AuditLog) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(log.path).read_bytes().splitlines()]


def test_lines_chain_from_a_genesis_naming_the_session(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path / "audit"), SID)
    log.append({"event": "door.ready", "role": "fs", "input_tokens": 12, "nested": {"hosts": ["a", "b"]}})
    raw = Path(log.path).read_bytes().splitlines()
    first, second = (json.loads(line) for line in raw)
    assert list(first) == ["seq", "ts", "event", "sid", "format", "alg", "key", "prev"]
    assert first["event"] == "audit.open" and first["sid"] == SID and first["key"] == log.fingerprint
    assert first["prev"] == genesis_hash(SID)
    assert second == {**second, "seq": 2, "event": "door.ready", "role": "fs", "prev": line_hash(raw[0])}
    assert str(second["ts"]).endswith("Z")
    assert log.lines == 2


def test_files_are_roots_alone_and_the_private_key_is_never_written(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b"
    old_umask = os.umask(0o077)
    try:
        log = AuditLog.create(str(directory), SID)
    finally:
        os.umask(old_umask)
    assert os.stat(directory).st_mode & 0o777 == 0o700
    assert os.stat(tmp_path / "a").st_mode & 0o777 == 0o755  # a shared parent stays traversable
    assert os.stat(log.path).st_mode & 0o777 == 0o600
    assert (directory / "audit.pub").read_text() == log.public_key_pem
    sig_path, public_pem = log.close()
    assert sig_path == str(directory / "audit.sig") and public_pem == log.public_key_pem
    assert sorted(os.listdir(directory)) == ["audit.jsonl", "audit.pub", "audit.sig"]
    for name in os.listdir(directory):
        assert b"PRIVATE" not in (directory / name).read_bytes()


def test_close_signs_the_head_once_and_the_log_verifies(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), SID)
    log.append({"event": "net.request", "host": "api.example.com", "status": 200})
    first = log.close()
    assert log.close() == first
    with pytest.raises(AuditError, match="closed and signed"):
        log.append({"event": "late"})
    last = _lines(log)[-1]
    assert last["event"] == "audit.close" and last["lines"] == 3 == last["seq"]
    verdict = verify_audit(Path(log.path).read_bytes(), Path(first[0]).read_bytes(), first[1].encode())
    assert verdict.intact and verdict.lines == 3 and verdict.signer == log.fingerprint


def test_a_log_is_never_reopened(tmp_path: Path) -> None:
    AuditLog.create(str(tmp_path), SID)
    with pytest.raises(AuditError, match="never reopened"):
        AuditLog.create(str(tmp_path), SID)
    with pytest.raises(AuditError, match="8 lowercase hex"):
        AuditLog.create(str(tmp_path / "x"), "../etc")


@pytest.mark.root
def test_the_default_place_is_var_lib_sharness() -> None:
    sid = os.urandom(4).hex()
    made = [p for p in ("/var/lib/sharness", AUDIT_ROOT) if not os.path.exists(p)]
    try:
        log = AuditLog.create(None, sid)
        log.close()
        assert log.path == f"{AUDIT_ROOT}/{sid}/audit.jsonl"
        assert os.stat(f"{AUDIT_ROOT}/{sid}").st_mode & 0o777 == 0o700
    finally:
        shutil.rmtree(f"{AUDIT_ROOT}/{sid}", ignore_errors=True)
        for path in reversed(made):
            with contextlib.suppress(OSError):  # another session may have arrived meanwhile
                os.rmdir(path)


GITHUB = "ghp_" + "T0ken" * 7 + "x"  # 36 characters after the prefix


def test_a_secret_is_redacted_in_place_and_the_event_kept(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), SID)
    log.append({"event": "door.event", "door": "fs", "op": "write", "path": f"{GITHUB}.txt", "decision": "allow",
                "status": 200, "row": "", "role": "fs"})
    log.append({"event": "door.event", "door": "fs", "op": "rename", "path": f"{GITHUB}.txt",
                "dest": f"renamed-{GITHUB}.txt", "decision": "allow", "status": 200, "row": "", "role": "fs"})
    log.append({"event": "door.status", "detail": PEM_KEY, "password": "hunter2-hunter2"})
    sig_path, pem = log.close()
    raw = Path(log.path).read_bytes()
    for secret in (GITHUB.encode(), b"MC4CAQAwBQYDK2VwBCIEIP3x", b"hunter2"):
        assert secret not in raw
    write, rename, status = _lines(log)[1:4]
    assert {k: write[k] for k in ("op", "decision", "status", "row", "role")} == \
        {"op": "write", "decision": "allow", "status": 200, "row": "", "role": "fs"}
    mark = str(write["path"]).removesuffix(".txt")
    assert re.fullmatch(r"\[redacted:github:[0-9a-f]{12}\]", mark)
    assert (rename["path"], rename["dest"]) == (f"{mark}.txt", f"renamed-{mark}.txt")  # one fingerprint, tied
    assert str(status["detail"]).startswith("[redacted:pem:") and str(status["password"]).startswith("[redacted:named:")
    assert verify_audit(raw, Path(sig_path).read_bytes(), pem.encode()).intact


def test_the_fingerprint_is_keyed_per_session_and_its_key_never_written(tmp_path: Path) -> None:
    marks = []
    for name in ("a", "b"):
        log = AuditLog.create(str(tmp_path / name), SID)
        log.append({"event": "x", "path": GITHUB})
        key = log._guard._key
        log.close()
        marks.append(str(_lines(log)[1]["path"]))
        for file in (tmp_path / name).iterdir():
            assert key not in file.read_bytes() and key.hex().encode() not in file.read_bytes()
    assert marks[0] != marks[1]  # the same token, two sessions: nothing ties them
    assert hashlib.sha256(GITHUB.encode()).hexdigest()[:12] not in marks[0]  # not a bare hash one could try


def test_a_kept_value_is_redacted_everywhere_from_then_on(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), SID)
    log.append({"event": "keys.used", "note": "the value is correct-horse-battery!"})  # not kept yet
    log.forbid("correct-horse-battery")
    log.append({"event": "keys.used", "note": "the value is correct-horse-battery!",
                "map": {"correct-horse-battery": 1}})
    log.append({"event": "audit.forbid", "role": "keys", "name": "db", "value": "tr0ub4dor&3-long"})
    log.append({"event": "net.request", "requested": "https://h.example/?q=tr0ub4dor&3-long"})
    log.append({"event": "audit.forbid", "role": "keys", "name": "pin", "value": "1234"})
    log.close()
    first, kept, forbid, later, short = _lines(log)[1:6]
    assert first["note"] == "the value is correct-horse-battery!"
    mark = str(kept["note"]).removeprefix("the value is ").removesuffix("!")
    assert mark.startswith("[redacted:kept:") and kept["map"] == {mark: 1}
    assert forbid == {**forbid, "event": "audit.forbid", "name": "db", "kept": True}
    assert str(forbid["value"]).startswith("[redacted:kept:")
    assert later["requested"] == f"https://h.example/?q={forbid['value']}"  # the same fingerprint as its forbid
    assert short == {**short, "name": "pin", "value": None, "kept": False}
    assert b"tr0ub4dor" not in Path(log.path).read_bytes() and b"1234" not in Path(log.path).read_bytes()
    with pytest.raises(AuditError, match="at least 8"):
        log.forbid("short")


def test_only_what_the_log_cannot_hold_is_refused_and_the_chain_stays_intact(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), SID)
    refused: list[dict[Any, object]] = [
        {"event": "x", "seq": 99},
        {"event": "x", "prev": "0" * 64},
        {"event": "x", "ts": "yesterday"},
        {"no_event": 1},
        {"event": "x", 7: "non-string key"},
    ]
    for event in refused:
        with pytest.raises(AuditRefused):
            log.append(event)
    with pytest.raises(TypeError, match="must be JSON"):
        log.append({"event": "x", "blob": b"bytes"})
    with pytest.raises(ValueError, match="not JSON compliant"):
        log.append({"event": "x", "ratio": float("nan")})
    log.append({"event": "keys.get", "secret_name": "anthropic"})
    sig_path, pem = log.close()
    assert [line["event"] for line in _lines(log)] == ["audit.open", "keys.get", "audit.close"]
    assert verify_audit(Path(log.path).read_bytes(), Path(sig_path).read_bytes(), pem.encode()).intact


def test_lines_are_committed_in_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    log = AuditLog.create(str(tmp_path / "durable"), SID)
    opened = len(fsyncs)  # the pub file and the first line
    for number in range(100):
        log.append({"event": "door.event", "n": number})
    assert len(fsyncs) == opened and log.statistics() == AuditStatistics(lines=101, commits=1)
    log.commit()
    log.commit()  # nothing new: nothing to sync
    assert len(fsyncs) == opened + 1 and log.statistics().commits == 2
    log.close()
    assert log.statistics().commits == 3
    lazy = AuditLog.create(str(tmp_path / "lazy"), SID, durable=False)
    lazy.append({"event": "x"})
    lazy.commit()
    assert lazy.statistics().commits == 0


def test_a_secret_the_keys_door_fingerprinted_is_redacted_whole_or_in_part(tmp_path: Path) -> None:
    secret = "sk-not-a-known-shape-" + "Qm9vdHN0cmFwcGVkLWZpbmdlcnByaW50"
    log = AuditLog.create(str(tmp_path), SID)
    log.forbid_fingerprint(fingerprint_of({"db": secret.encode()}, {}))
    log.forbid("correct-horse-battery")  # an exact value still works beside the fingerprint
    note = f"é before {'x' * 9}{secret[5:40]}{'y' * 30} after"
    log.append({"event": "door.event", "path": f"dir/{secret}.txt", "note": note,
                "other": "correct-horse-battery", secret: 1})
    log.close()
    raw = Path(log.path).read_bytes()
    assert secret[5:21].encode() not in raw and b"correct-horse-battery" not in raw
    line = _lines(log)[1]
    whole = str(line["path"]).removeprefix("dir/").removesuffix(".txt")
    assert re.fullmatch(r"\[redacted:kept:[0-9a-f]{12}\]", whole) and whole in line
    # a run redacts where the whole secret would lie (5 bytes before it, 13 after): over, never under
    assert re.fullmatch(r"é before x{4}\[redacted:kept:[0-9a-f]{12}\]y{17} after", str(line["note"]))
    assert str(line["other"]).startswith("[redacted:kept:")


def test_an_event_with_any_string_keys_is_written_whole(tmp_path: Path) -> None:
    # The lines are made by the processors directly: no logger is bound per event, so no key name (`self`, as a
    # bound logger's own argument, once refused as a TypeError) is special.
    log = AuditLog.create(str(tmp_path), SID)
    log.append({"event": "door.event", "self": 1, "method_name": "x", "processors": [1], "role": "fs"})
    log.close()
    line = json.loads((tmp_path / "audit.jsonl").read_text().splitlines()[1])
    assert (line["event"], line["self"], line["method_name"], line["processors"]) == ("door.event", 1, "x", [1])
    assert list(line)[:3] == ["seq", "ts", "event"] and list(line)[-1] == "prev"
