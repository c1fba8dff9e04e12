"""`sharness-launch verify-audit DIR`: what it prints and how it exits."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from launcher.commands import verify_audit as command
from launcher.lifecycle.audit import AuditLog


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["verify-audit", *argv])
    result: int = args.func(args)
    return result


@pytest.fixture
def audit_dir(tmp_path: Path) -> tuple[Path, AuditLog]:
    log = AuditLog.create(str(tmp_path / "audit"), "0badc0de")
    log.append({"event": "model.call", "input_tokens": 10, "output_tokens": 3})
    _, pem = log.close()
    (tmp_path / "session.pub").write_text(pem)  # the key as the launcher printed it
    return tmp_path / "audit", log


def test_intact_exits_0(audit_dir: tuple[Path, AuditLog], capsys: pytest.CaptureFixture[str]) -> None:
    directory, log = audit_dir
    assert _cli(str(directory)) == 0
    assert capsys.readouterr().out == (f"intact, 0 events lost (session 0badc0de, 3 lines, signed by "
                                       f"{log.fingerprint}; "
                                       "unverified key: only the directory's audit.pub vouches for it)\n")
    assert _cli(str(directory), "--pubkey", str(directory.parent / "session.pub")) == 0


def test_lost_events_are_said_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = AuditLog.create(str(tmp_path / "audit"), "0badc0de")
    log.append({"event": "audit.lost", "role": "fs", "count": 7})
    log.close()
    assert _cli(str(tmp_path / "audit")) == 0
    assert capsys.readouterr().out.startswith("intact, 7 events lost: fs 7 (")
    assert _cli(str(tmp_path / "audit"), "--json") == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["intact"], verdict["lost"], verdict["lost_by_role"]) == (True, 7, {"fs": 7})


def test_an_edited_line_exits_1_naming_it(audit_dir: tuple[Path, AuditLog], capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = audit_dir
    log_path = directory / "audit.jsonl"
    log_path.write_bytes(log_path.read_bytes().replace(b'"output_tokens":3', b'"output_tokens":0'))
    assert _cli(str(directory)) == 1
    assert capsys.readouterr().out.startswith("broken at line 2: ")
    assert _cli(str(directory), "--json") == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["intact"] is False and verdict["broken_at"] == 2 and "edited" in verdict["reason"]


def test_a_removed_signature_exits_1(audit_dir: tuple[Path, AuditLog], capsys: pytest.CaptureFixture[str]) -> None:
    directory, _ = audit_dir
    (directory / "audit.sig").unlink()
    assert _cli(str(directory)) == 1
    assert capsys.readouterr().out.startswith("broken at line 3: no signature")


def test_a_replaced_key_is_caught_with_pubkey(
    audit_dir: tuple[Path, AuditLog], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, _ = audit_dir
    forger = Ed25519PrivateKey.generate().public_key()
    pem = forger.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (directory / "audit.pub").write_bytes(pem)
    assert _cli(str(directory), "--pubkey", str(directory.parent / "session.pub")) == 1
    assert capsys.readouterr().out.startswith("broken at line 1: audit.pub is not the session's key")


def test_an_unreadable_dir_exits_66(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(str(tmp_path / "sharness-nowhere")) == 66
    assert "cannot read" in capsys.readouterr().err
