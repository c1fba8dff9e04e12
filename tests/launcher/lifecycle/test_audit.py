"""The audit writer: chained structlog lines, a session key only in memory, and no secret in any line."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from launcher.lifecycle.audit import AuditError, AuditLog, AuditRefused, check_event
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


@pytest.mark.parametrize(
    "key",
    ["password", "api_key", "apiKey", "APIKey", "Authorization", "x-api-key", "github_token", "token",
     "client_secret", "privateKey", "private_key_pem", "Set-Cookie", "secret", "db.passwd"],
)
def test_keys_named_like_secrets_are_refused(key: str) -> None:
    with pytest.raises(AuditRefused, match="named like a secret"):
        check_event({"event": "x", key: "anything"})
    with pytest.raises(AuditRefused, match="named like a secret"):
        check_event({"event": "x", "request": {"headers": [{key: "v"}]}})


@pytest.mark.parametrize(
    "key",
    ["input_tokens", "tokens", "max_tokens", "token_count", "secret_name", "api_key_id", "key",
     "private_key_path", "role", "session", "keys", "cookie_count"],
)
def test_keys_that_name_or_count_secrets_are_allowed(key: str) -> None:
    check_event({"event": "x", key: "anthropic"})


@pytest.mark.parametrize(
    ("value", "what"),
    [
        (PEM_KEY, "PEM private key"),
        ("-----BEGIN EC PRIVATE KEY-----", "PEM private key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "PEM private key"),
        ("sk-ant-api03-" + "A" * 40, "Anthropic API key"),
        ("sk-proj-" + "b" * 40, "OpenAI API key"),
        ("AKIAIOSFODNN7EXAMPLE", "AWS access key id"),
        ("ghp_" + "x" * 36, "GitHub token"),
        ("xoxb-1234567890-abcdef", "Slack token"),
        ("AIza" + "S" * 35, "Google API key"),
        ("sk_live_" + "4" * 24, "Stripe live key"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX19f", "JSON web token"),
        ("Authorization: Bearer abcdefghijklmnop0123", "bearer credential"),
        ("https://user:hunter2@example.com/x", "password in a URL"),
    ],
)
def test_values_that_look_secret_are_refused_and_never_repeated(value: str, what: str) -> None:
    for event in ({"event": "x", "detail": value}, {"event": "x", "args": ["ok", {"deep": value}]}, {"event": value}):
        with pytest.raises(AuditRefused, match=what) as refused:
            check_event(event)
        assert value not in str(refused.value)


@pytest.mark.parametrize(
    "value",
    ["-----BEGIN PUBLIC KEY-----", "-----BEGIN CERTIFICATE-----", "sk-short", "ask-anthropic", "bearer of news",
     "https://example.com/path", "sha256:" + "a" * 64],
)
def test_ordinary_values_pass(value: str) -> None:
    check_event({"event": "x", "detail": value})


def test_a_secret_used_as_a_key_is_refused_without_naming_it() -> None:
    secret = "sk-ant-api03-" + "Q" * 30
    with pytest.raises(AuditRefused, match="a key in 'map' holds what looks like an Anthropic") as refused:
        check_event({"event": "x", "map": {secret: 1}})
    assert secret not in str(refused.value)
    with pytest.raises(AuditRefused, match=r"the key 'request\.api_key' is named like a secret"):
        check_event({"event": "x", "request": {"api_key": 1}})


def test_refused_events_write_nothing_and_the_chain_stays_intact(tmp_path: Path) -> None:
    log = AuditLog.create(str(tmp_path), SID)
    log.forbid("correct-horse-battery")
    refused: list[dict[Any, object]] = [
        {"event": "keys.get", "api_key": "x"},
        {"event": "door.status", "detail": PEM_KEY},
        {"event": "keys.get", "note": "the value is correct-horse-battery!"},
        {"event": "x", "seq": 99},
        {"event": "x", "prev": "0" * 64},
        {"event": "x", "ts": "yesterday"},
        {"no_event": 1},
        {"event": "x", 7: "non-string key"},
    ]
    for event in refused:
        with pytest.raises(AuditRefused) as caught:
            log.append(event)
        assert "correct-horse-battery" not in str(caught.value)
    with pytest.raises(TypeError, match="must be JSON"):
        log.append({"event": "x", "blob": b"bytes"})
    with pytest.raises(ValueError, match="not JSON compliant"):
        log.append({"event": "x", "ratio": float("nan")})
    log.append({"event": "keys.get", "secret_name": "anthropic"})
    sig_path, pem = log.close()
    assert [line["event"] for line in _lines(log)] == ["audit.open", "keys.get", "audit.close"]
    assert verify_audit(Path(log.path).read_bytes(), Path(sig_path).read_bytes(), pem.encode()).intact
    with pytest.raises(AuditError, match="at least 8"):
        log.forbid("short")
