"""The audit guard, pure: which field names and values never enter a line, and the refusal never repeats them."""

from __future__ import annotations

import pytest

from launcher.policy.audit_guard import NOT_SHOWN, Refused, refusal_of, secret_key_rule, secret_value_rule

ANTHROPIC = "sk-ant-api03-" + "A" * 24
NAMED = "is named like a secret"


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


@pytest.mark.parametrize(("text", "looks_like"), [
    ("-----BEGIN PRIVATE KEY-----\nMII", "a PEM private key"),
    ("x -----BEGIN EC PRIVATE KEY----- y", "a PEM private key"),
    (f"key={ANTHROPIC}", "an Anthropic API key"),
    ("sk-proj-" + "b" * 40, "an OpenAI API key"),
    ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
    ("ghp_" + "c" * 36, "a GitHub token"),
    ("github_pat_" + "d" * 40, "a GitHub token"),
    ("xoxb-1234567890-abc", "a Slack token"),
    ("AIza" + "e" * 35, "a Google API key"),
    ("sk_live_" + "f" * 24, "a Stripe live key"),
    ("eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl", "a JSON web token"),
    ("Authorization: Bearer abcdefghijklmnop", "a bearer credential"),
    ("https://user:hunter2@example.test/x", "a password in a URL"),
])
def test_values_that_look_like_a_secret(text: str, looks_like: str) -> None:
    assert secret_value_rule(text) == f"holds what looks like {looks_like}"


@pytest.mark.parametrize("text", [
    "-----BEGIN PUBLIC KEY-----", "-----BEGIN CERTIFICATE-----", "sk-ant-short", "AKIA123", "ghp_short",
    "https://user@example.test/", "https://example.test:8443/path", "Bearer short", "sha256:" + "0" * 64,
    "spiffe://t.sharness.test/session/0123abcd/app", "", "plain words",
])
def test_values_that_do_not(text: str) -> None:
    assert secret_value_rule(text) is None


def test_a_registered_secret_is_refused_anywhere_in_a_value() -> None:
    known = frozenset({"registered-value-1"})
    assert secret_value_rule("prefix registered-value-1 suffix", known) == "holds a secret this session registered"
    assert secret_value_rule("registered-value-2", known) is None


@pytest.mark.parametrize(("event", "want"), [
    ({"event": "door.ready", "role": "fs", "detail": {"rows": ["fs.read_only"]}}, None),
    ({"event": "x", "secret_name": "anthropic", "token_count": 3}, None),
    ({}, Refused("NoneType", "the field 'event'", "must be a non-empty string naming what happened")),
    ({"event": ""}, Refused("str", "the field 'event'", "must be a non-empty string naming what happened")),
    ({"event": 7}, Refused("int", "the field 'event'", "must be a non-empty string naming what happened")),
    ({"event": ANTHROPIC}, Refused(NOT_SHOWN, "the event name", "holds what looks like an Anthropic API key")),
    ({"event": "x", "seq": 1}, Refused("x", "the field 'seq'", "is written by the log itself")),
    ({"event": "x", "prev": "h"}, Refused("x", "the field 'prev'", "is written by the log itself")),
    ({"event": "x", "ts": "t"}, Refused("x", "the field 'ts'", "is written by the log itself")),
    ({"event": "x", "detail": f"got {ANTHROPIC}"},
     Refused("x", "the value of 'detail'", "holds what looks like an Anthropic API key")),
    ({"event": "x", "req": {"headers": [{"authorization": "v"}]}},
     Refused("x", "the key 'req.headers[0].authorization'", NAMED)),
    ({"event": "x", "req": {"list": ["ok", f"{ANTHROPIC}"]}},
     Refused("x", "the value of 'req.list[1]'", "holds what looks like an Anthropic API key")),
    ({"event": "x", "map": {ANTHROPIC: 1}},
     Refused("x", "a key in 'map'", "holds what looks like an Anthropic API key")),
    ({"event": "x", ANTHROPIC: 1}, Refused("x", "a key in 'the event'", "holds what looks like an Anthropic API key")),
    ({"event": "x", "password": "hunter2"}, Refused("x", "the key 'password'", NAMED)),
])
def test_refusal_of(event: dict[str, object], want: Refused | None) -> None:
    refused = refusal_of(event)
    assert refused == want
    if refused is not None:  # the refusal names where, never what
        assert ANTHROPIC not in f"{refused.event} {refused.where} {refused.rule}" and "hunter2" not in refused.where


def test_a_registered_secret_in_a_nested_value() -> None:
    event = {"event": "x", "a": [{"b": "…registered-value-1…"}]}
    assert refusal_of(event, frozenset({"registered-value-1"})) == Refused(
        "x", "the value of 'a[0].b'", "holds a secret this session registered")
    assert refusal_of(event) is None
