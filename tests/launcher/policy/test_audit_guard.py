"""The audit guard, pure: what is redacted (only the secret, with its fingerprint), what is kept, what is refused."""

from __future__ import annotations

import hashlib

import pytest

from launcher.policy.audit_guard import (
    Refused,
    kept_pattern,
    placeholder,
    redact_event,
    redact_text,
    reserved_refusal,
    secret_key_rule,
)

ANTHROPIC = "sk-ant-api03-" + "A" * 24
GITHUB = "ghp_" + "c" * 36
NAMED = "is named like a secret"


def fp(text: str) -> str:
    """A stand-in for the log's keyed fingerprint: deterministic, and shows nothing of `text`."""
    return hashlib.sha256(b"test-key\0" + text.encode()).hexdigest()[:12]


@pytest.mark.parametrize("key", [
    "password", "passwd", "api_key", "apiKey", "API-KEY", "x-api-key", "privateKey", "private_key", "client_secret",
    "Set-Cookie", "authorization", "Authorization", "token", "access_token", "session_key", "aws_secret_access_key",
    "bearer", "mnemonic", "signingKey", "credentials", "db.password", "secret",
])
def test_keys_named_like_a_secret(key: str) -> None:
    assert secret_key_rule(key) == NAMED


@pytest.mark.parametrize("key", [
    "secret_name", "token_count", "api_key_id", "password_len", "secret_ref", "secrets_path", "credential_source",
    "key", "keys", "monkey", "tokenizer", "host", "role", "event", "detail", "", "---", "sid", "fingerprint",
])
def test_keys_that_name_or_describe_a_secret_or_nothing_secret(key: str) -> None:
    assert secret_key_rule(key) is None


@pytest.mark.parametrize(("secret", "rule"), [
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----", "pem"),
    ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1\n-----END EC PRIVATE KEY-----", "pem"),
    (ANTHROPIC, "anthropic"),
    ("sk-proj-" + "b" * 40, "openai"),
    ("AKIAIOSFODNN7EXAMPLE", "aws"),
    (GITHUB, "github"),
    ("github_pat_" + "d" * 40, "github"),
    ("xoxb-1234567890-abc", "slack"),
    ("AIza" + "e" * 35, "google"),
    ("sk_live_" + "f" * 24, "stripe"),
    ("eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl", "jwt"),
    ("Bearer abcdefghijklmnop", "bearer"),
    ("https://user:hunter2@", "url_password"),
])
def test_only_the_secret_is_replaced_and_its_rule_named(secret: str, rule: str) -> None:
    text = f"before {secret} after"
    assert redact_text(text, fp) == f"before {placeholder(rule, fp(secret))} after"


def test_a_pem_key_goes_with_its_body_to_its_end_line_or_to_the_end() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIIBody\n-----END PRIVATE KEY-----"
    assert redact_text(f"{pem}\ntrailing words", fp) == f"{placeholder('pem', fp(pem))}\ntrailing words"
    cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"
    assert redact_text(f"x {cut}", fp) == f"x {placeholder('pem', fp(cut))}"


@pytest.mark.parametrize("text", [
    "-----BEGIN PUBLIC KEY-----", "-----BEGIN CERTIFICATE-----", "sk-ant-short", "AKIA123", "ghp_short",
    "https://user@example.test/", "https://example.test:8443/path", "Bearer short", "sha256:" + "0" * 64,
    "spiffe://t.sharness.test/session/0123abcd/app", "", "plain words",
    "risk-assessment-of-the-quarterly-report-2024.md",  # "sk-" inside a word is no OpenAI key
    "xghp_" + "c" * 36,  # nor is a token shape glued to a letter (the limit of shapes: a name, not a proof)
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text, fp) == text


@pytest.mark.parametrize("before", ["backup_", "x-", "/", ".", " ", "=", "'"])
def test_a_token_after_punctuation_is_found(before: str) -> None:
    assert redact_text(f"{before}{GITHUB}", fp) == f"{before}{placeholder('github', fp(GITHUB))}"


def test_the_same_secret_has_the_same_fingerprint_wherever_it_is() -> None:
    event = {"event": "door.event", "op": "rename", "path": f"{GITHUB}.txt", "dest": f"renamed-{GITHUB}.txt"}
    redacted = redact_event(event, fp)
    mark = placeholder("github", fp(GITHUB))
    assert redacted == {"event": "door.event", "op": "rename", "path": f"{mark}.txt", "dest": f"renamed-{mark}.txt"}


def test_an_event_keeps_every_field_and_only_loses_its_secrets() -> None:
    event = {"event": "door.event", "kind": "net.request", "requested": f"{GITHUB}.example.test:443",
             "decision": "refuse", "status": 400, "row": "doors.net.framing", "role": "net", "answers": [],
             "bytes_up": 0, "nested": {"list": ["ok", f"x_{ANTHROPIC}"], "n": 1.5, "flag": None}}
    redacted = redact_event(event, fp)
    assert list(redacted) == list(event)
    assert {key: redacted[key] for key in ("event", "kind", "decision", "status", "row", "role", "answers")} == \
        {key: event[key] for key in ("event", "kind", "decision", "status", "row", "role", "answers")}
    assert redacted["requested"] == f"{placeholder('github', fp(GITHUB))}.example.test:443"
    assert redacted["nested"] == {"list": ["ok", "x_" + placeholder("anthropic", fp(ANTHROPIC))], "n": 1.5,
                                  "flag": None}


def test_a_field_named_like_a_secret_has_its_whole_value_replaced() -> None:
    redacted = redact_event({"event": "x", "req": {"headers": [{"authorization": "Basic dXNlcjpwYXNz"}]},
                             "password": "hunter2", "api_key": {"v": 1}, "secret_name": "anthropic"}, fp)
    assert redacted["req"] == {"headers": [{"authorization": placeholder("named", fp("Basic dXNlcjpwYXNz"))}]}
    assert redacted["password"] == placeholder("named", fp("hunter2"))
    assert redacted["api_key"] == placeholder("named", fp('{"v": 1}'))
    assert redacted["secret_name"] == "anthropic"  # it names a secret; it is not one


def test_a_secret_used_as_a_key_is_redacted_in_the_key() -> None:
    redacted = redact_event({"event": "x", "map": {ANTHROPIC: 1, f"{GITHUB}": 2}}, fp)
    assert redacted["map"] == {placeholder("anthropic", fp(ANTHROPIC)): 1, placeholder("github", fp(GITHUB)): 2}
    mark = placeholder("github", fp(GITHUB))
    # A key that redacts to one already there stays a field of its own.
    assert redact_event({"event": "x", "m": {mark: 1, GITHUB: 2}}, fp)["m"] == {mark: 1, f"{mark}'": 2}


def test_kept_values_are_redacted_exactly_the_longest_first() -> None:
    kept = kept_pattern({"correct-horse-battery", "correct-horse-battery-staple", "short"})
    assert kept is not None and kept.pattern.startswith("correct\\-horse\\-battery\\-staple|")
    text = "a correct-horse-battery-staple and a correct-horse-battery, short stays"
    assert redact_text(text, fp, kept) == (f"a {placeholder('kept', fp('correct-horse-battery-staple'))} and a "
                                           f"{placeholder('kept', fp('correct-horse-battery'))}, short stays")
    assert kept_pattern({"short"}) is None and kept_pattern(()) is None
    # A kept value that is also secret-shaped is named as kept, once.
    assert redact_text(GITHUB, fp, kept_pattern({GITHUB})) == placeholder("kept", fp(GITHUB))


@pytest.mark.parametrize(("event", "want"), [
    ({"event": "door.ready", "role": "fs", "detail": {"rows": ["fs.read_only"]}}, None),
    ({"event": "x", "secret_name": "anthropic", "token_count": 3}, None),
    ({}, Refused("NoneType", "the field 'event'", "must be a non-empty string naming what happened")),
    ({"event": ""}, Refused("str", "the field 'event'", "must be a non-empty string naming what happened")),
    ({"event": 7}, Refused("int", "the field 'event'", "must be a non-empty string naming what happened")),
    ({"event": "x", "seq": 1}, Refused("x", "the field 'seq'", "is written by the log itself")),
    ({"event": "x", "prev": "h"}, Refused("x", "the field 'prev'", "is written by the log itself")),
    ({"event": "x", "ts": "t"}, Refused("x", "the field 'ts'", "is written by the log itself")),
    ({"event": "x", "nested": {"seq": 1}}, None),  # only the log's own top-level fields are its
])
def test_reserved_refusal(event: dict[str, object], want: Refused | None) -> None:
    assert reserved_refusal(event) == want


def test_an_event_name_shaped_like_a_secret_is_redacted_too() -> None:
    assert redact_event({"event": f"x.{ANTHROPIC}"}, fp) == {"event": f"x.{placeholder('anthropic', fp(ANTHROPIC))}"}
