"""What never enters an audit line: a secret's value, a field named like one, a field the log writes itself.
Pure: an event in, the first refusal (or None) out; launcher/lifecycle/audit.py raises it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

RESERVED_KEYS = frozenset({"seq", "ts", "prev"})
NOT_SHOWN = "<not shown>"

# Key names that hold a secret's value. A key ending in one of _METADATA names or describes a secret instead.
_SECRET_WORDS = frozenset({
    "secret", "secrets", "password", "passwd", "passphrase", "pwd", "apikey", "privkey", "privatekey",
    "credential", "credentials", "cookie", "cookies", "authorization", "bearer", "mnemonic", "otp", "token",
})
_SECRET_PAIRS = frozenset({
    ("api", "key"), ("private", "key"), ("secret", "key"), ("access", "key"), ("signing", "key"),
    ("session", "key"), ("client", "secret"), ("set", "cookie"),
})
_METADATA = frozenset({"name", "names", "id", "ids", "ref", "fingerprint", "len", "length", "bytes", "count",
                       "kind", "type", "host", "hosts", "role", "roles", "path", "label", "source"})
_SECRET_VALUES = {  # group name: (what it looks like, pattern)
    "pem": ("a PEM private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
    "anthropic": ("an Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
    "openai": ("an OpenAI API key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}"),
    "aws": ("an AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "github": ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    "slack": ("a Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    "google": ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    "stripe": ("a Stripe live key", r"\b[rs]k_live_[0-9A-Za-z]{20,}"),
    "jwt": ("a JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    "bearer": ("a bearer credential", r"\b(?i:bearer)\s+[A-Za-z0-9._~+/=-]{16,}"),
    "url_password": ("a password in a URL", r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
}
# One alternation: a single scan per string, whatever the number of patterns.
_SECRET_VALUE = re.compile("|".join(f"(?P<{group}>{pattern})" for group, (_, pattern) in _SECRET_VALUES.items()))


@dataclass(frozen=True)
class Refused:
    """Why an event may not be logged: which event (by a name safe to show), where in it, and the rule."""

    event: str
    where: str
    rule: str


def _segments(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return [part for part in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if part]


def secret_key_rule(key: str) -> str | None:
    """Why a field named `key` would hold a secret's value, or None."""
    parts = _segments(key)
    if not parts or parts[-1] in _METADATA:
        return None
    if any(part in _SECRET_WORDS for part in parts):
        return "is named like a secret"
    if any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts)):
        return "is named like a secret"
    return None


def secret_value_rule(text: str, known: frozenset[str] = frozenset()) -> str | None:
    """Why `text` looks like (or contains) a secret, or None."""
    match = _SECRET_VALUE.search(text)
    if match and match.lastgroup:
        return f"holds what looks like {_SECRET_VALUES[match.lastgroup][0]}"
    if any(secret in text for secret in known):
        return "holds a secret this session registered"
    return None


def _walk(value: object, where: str) -> Iterator[tuple[str, str, bool]]:
    """Every (where, text, is_key) inside a JSON-shaped value; a key is yielded (with its parent's path)
    before anything whose path names it, so a refused key never appears in a path."""
    if isinstance(value, str):
        yield where, value, False
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield where, str(key), True
            yield from _walk(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, f"{where}[{index}]")


def refusal_of(event: Mapping[str, object], known: frozenset[str] = frozenset()) -> Refused | None:
    """The first reason `event` may not be logged: a reserved field, a key named like a secret, or a key or
    value holding what looks like one (or one of `known`); None when it may be logged."""
    name = event.get("event")
    if not isinstance(name, str) or not name:
        return Refused(type(name).__name__, "the field 'event'", "must be a non-empty string naming what happened")
    rule = secret_value_rule(name, known)
    if rule:
        return Refused(NOT_SHOWN, "the event name", rule)
    for key in event:
        if key in RESERVED_KEYS:
            return Refused(name, f"the field {key!r}", "is written by the log itself")
    for where, text, is_key in _walk(event, ""):
        rule = secret_value_rule(text, known)
        if rule:
            place = f"a key in {where or 'the event'!r}" if is_key else f"the value of {where!r}"
            return Refused(name, place, rule)
        rule = secret_key_rule(text) if is_key else None
        if rule:
            return Refused(name, f"the key {f'{where}.{text}' if where else text!r}", rule)
    return None
