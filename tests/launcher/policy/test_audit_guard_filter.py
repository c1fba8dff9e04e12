"""The guard's one scan of an event's text joined (may_hold_secret): never says "clean" where a text alone holds a
secret, wherever the secret sits (a text's start or end, a key, a nested value), and the event redacts the same
either way."""

from __future__ import annotations

import hashlib

import pytest

from launcher.policy import audit_guard
from launcher.policy.audit_guard import BEARER, SHAPE_LITERALS, kept_pattern, may_hold_secret, redact_event, texts_of
from pki.secret_shapes import SECRET_VALUE_RULES

SECRETS = [
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----MIIEvQIBADANBg",  # cut short: to the end of its text
    "sk-ant-api03-" + "A" * 24,
    "sk-proj-" + "b" * 40,
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "c" * 36,
    "github_pat_" + "d" * 40,
    "xoxb-1234567890-abc",
    "AIza" + "e" * 35,
    "sk_live_" + "f" * 24,
    "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl",
    "Bearer abcdefghijklmnop",
    "bEaReR\tabcdefghijklmnop",
    "https://user:hunter2@",
]
KEPT = "the-kept-value-42"
# Neighbours glued on either side of the joined scan: letters, digits, `_` and `-` are what the rules look at.
NEIGHBOURS = ["", "A", "z9", "_", "-", " ", "\n"]


def fp(text: str) -> str:
    return hashlib.sha256(b"test-key\0" + text.encode()).hexdigest()[:12]


def slow(event: dict[str, object], kept: object = None) -> dict[str, object]:
    """The event redacted text by text, as before the joined scan."""
    redacted = audit_guard._Redactor(fp, kept, clean=False).mapping(event)  # type: ignore[arg-type]
    return {str(key): value for key, value in redacted.items()}


def events_around(secret: str, neighbour: str) -> list[dict[str, object]]:
    """The secret as a whole value, at a value's end before a text starting with `neighbour`, after one ending
    with it, as a key, and nested in a list and a mapping."""
    return [
        {"event": "door.event", "path": secret, "op": "write"},
        {"event": f"x{neighbour}", "path": f"dir/{secret}", "next": f"{neighbour}tail"},
        {"event": "door.event", "before": f"head{neighbour}", "path": f"{secret}"},
        {"event": "door.event", secret: 1, "other": neighbour},
        {"event": "door.event", "list": [neighbour, f"a/{secret}", 3], "nested": {"k": neighbour}},
        {"event": "door.event", "nested": {f"{neighbour}": {"deeper": secret}}},
    ]


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("neighbour", NEIGHBOURS)
def test_the_joined_scan_finds_every_secret_a_text_holds(secret: str, neighbour: str) -> None:
    for event in events_around(secret, neighbour):
        assert may_hold_secret(texts_of(event)), event
        assert redact_event(event, fp) == slow(event), event
        assert secret not in repr(redact_event(event, fp))


@pytest.mark.parametrize("neighbour", NEIGHBOURS)
def test_the_joined_scan_finds_a_kept_value(neighbour: str) -> None:
    kept = kept_pattern([KEPT])
    for event in events_around(KEPT, neighbour):
        assert may_hold_secret(texts_of(event), kept), event
        assert redact_event(event, fp, kept) == slow(event, kept), event
        assert KEPT not in repr(redact_event(event, fp, kept))


def test_an_event_without_secrets_is_clean_and_keeps_its_named_fields_redacted() -> None:
    event = {"event": "door.event", "door": "fs", "op": "write", "path": "small/f00012", "bytes": 100,
             "decision": "allow", "status": 200, "row": "", "list": ["a", ("b", 2)], "password": "hunter2hunter2"}
    assert not may_hold_secret(texts_of(event), kept_pattern([KEPT]))
    redacted = redact_event(event, fp)
    assert redacted == slow(event)
    assert redacted["password"] == f"[redacted:named:{fp('hunter2hunter2')}]"
    assert redacted["list"] == ["a", ["b", 2]]


def test_every_rule_has_its_literals() -> None:
    assert set(SHAPE_LITERALS) | {"bearer"} == set(SECRET_VALUE_RULES)
    assert BEARER == "bearer"


def test_a_literal_across_two_texts_only_costs_the_scan_of_each() -> None:
    event = {"event": "door.event", "a": "https:/", "b": "/x", "c": "sk", "d": "-x"}
    assert not may_hold_secret(texts_of(event))  # NUL between: neither literal is there
    event = {"event": "door.event", "a": "see https://host/ and sk-1"}
    assert may_hold_secret(texts_of(event))
    assert redact_event(event, fp) == event
