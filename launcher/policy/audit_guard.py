"""What never enters an audit line: a secret's value. Redact, never delete: an event keeps every field, and
only the substring that looks like a secret (or is one the session keeps) becomes `[redacted:<rule>:<fp>]`,
where fp is a keyed fingerprint, so two lines about the same secret can be tied together without showing it.
A field named like a secret has its whole value replaced the same way. Fields the log writes itself are
refused. Pure: an event in, the redacted event (or the refusal) out; the key behind `fingerprint` is the
caller's (launcher/lifecycle/audit.py).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pki.secret_shapes import SECRET_VALUE

RESERVED_KEYS = frozenset({"seq", "ts", "prev"})
KEPT_RULE = "kept"  # an exact value the session keeps (the keys door's secrets, the launcher's literals)
NAMED_RULE = "named"  # the value of a field named like a secret
MIN_KEPT_CHARS = 8  # a shorter kept value would redact ordinary words

Fingerprint = Callable[[str], str]


class Kept(Protocol):
    """What finds the values a session keeps in a text and replaces each: a compiled alternation of exact values
    (`kept_pattern`), or a matcher of the keys door's fingerprint (launcher/lifecycle/audit.py)."""

    def sub(self, repl: Callable[[Any], str], string: str, /) -> str: ...

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


@dataclass(frozen=True)
class Refused:
    """Why an event may not be logged: which event (by a name safe to show), where in it, and the rule."""

    event: str
    where: str
    rule: str


def placeholder(rule: str, fingerprint: str) -> str:
    """What a line shows instead of a secret."""
    return f"[redacted:{rule}:{fingerprint}]"


def _segments(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return [part for part in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if part]


@functools.lru_cache(maxsize=4096)  # an event's keys repeat line after line
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


def kept_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern finding any of the kept values (the longest first, so one inside another is not cut)."""
    ordered = sorted({value for value in values if len(value) >= MIN_KEPT_CHARS}, key=len, reverse=True)
    return re.compile("|".join(re.escape(value) for value in ordered)) if ordered else None


def redact_text(text: str, fingerprint: Fingerprint, kept: Kept | None = None) -> str:
    """`text` with each kept value, then each secret-shaped substring, replaced by its placeholder."""
    if kept is not None:
        text = kept.sub(lambda found: placeholder(KEPT_RULE, fingerprint(found.group())), text)
    if SECRET_VALUE.search(text) is None:
        return text
    return SECRET_VALUE.sub(lambda found: placeholder(str(found.lastgroup), fingerprint(found.group())), text)


def texts_of(value: object) -> list[str]:
    """Every string in `value`, keys included, depth first."""
    found: list[str] = []
    _collect_texts(value, found)
    return found


def _collect_texts(value: object, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            # The usual field, a string key holding a string or a number, without a call of its own.
            if type(key) is str:
                found.append(key)
            else:
                _collect_texts(key, found)
            kind = type(item)
            if kind is str:
                found.append(item)
            elif kind not in _SCALARS:
                _collect_texts(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect_texts(item, found)


_SCALARS = frozenset({int, float, bool, type(None)})  # what holds no text (their subclasses take the long way)


# What every match of each rule of SECRET_VALUE_RULES contains: an event holding none of these (and no kept value)
# holds no secret's shape, and is not scanned text by text. A rule added there without its literals here fails
# tests/launcher/policy/test_audit_guard_filter.py.
SHAPE_LITERALS: dict[str, tuple[str, ...]] = {
    "pem": ("PRIVATE KEY-----",),
    "anthropic": ("sk-ant-",),
    "openai": ("sk-",),
    "aws": ("AKIA", "ASIA"),
    "github": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack": ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
    "google": ("AIza",),
    "stripe": ("k_live_",),
    "jwt": ("eyJ",),
    "url_password": ("://",),
}
BEARER = "bearer"  # the one rule matched without regard to case (str.lower maps no other letter onto these)
_LITERALS = tuple(dict.fromkeys(literal for literals in SHAPE_LITERALS.values() for literal in literals))


def may_hold_secret(texts: list[str], kept: Kept | None = None) -> bool:
    """Whether any of `texts` may hold a secret's shape or a kept value: a look for each shape's literals in them
    all, joined by NUL, and one scan for the kept values. Never False where one text holds one: a literal or a
    kept value inside a text is inside the joined ones (a find across two texts only costs the scan of each)."""
    joined = "\0".join(texts)
    if any(literal in joined for literal in _LITERALS) or BEARER in joined.lower():
        return True
    if kept is None:
        return False
    found: list[bool] = []

    def note(_found: Any) -> str:
        found.append(True)
        return ""

    kept.sub(note, joined)
    return bool(found)


class _Redactor:
    def __init__(self, fingerprint: Fingerprint, kept: Kept | None, *, clean: bool = False) -> None:
        self.fingerprint = fingerprint
        self.kept = kept
        self.clean = clean  # no text of the event holds a secret's shape or a kept value: only names are judged

    def text(self, text: str) -> str:
        return text if self.clean else redact_text(text, self.fingerprint, self.kept)

    def value(self, value: object) -> object:
        if type(value) in _SCALARS:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value  # numbers, booleans, None; anything else the renderer refuses

    def whole(self, value: object) -> str:
        """A named secret's whole value, of any JSON type, as one placeholder."""
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
        return placeholder(NAMED_RULE, self.fingerprint(text))

    def mapping(self, value: Mapping[Any, object]) -> dict[object, object]:
        out: dict[object, object] = {}
        clean = self.clean
        for key, item in value.items():
            shown = self.text(key) if isinstance(key, str) else key
            while shown in out:  # two keys that redact alike stay two fields
                shown = f"{shown}'"
            named = isinstance(shown, str) and secret_key_rule(shown) is not None
            kind = type(item)
            if named:
                out[shown] = self.whole(item)
            elif kind in _SCALARS or (clean and kind is str):
                out[shown] = item  # as self.value would give it back, without the call
            else:
                out[shown] = self.value(item)
        return out


def redact_event(event: Mapping[str, object], fingerprint: Fingerprint,
                 kept: Kept | None = None) -> dict[str, object]:
    """The event with every secret (shaped like one, kept, or in a field named like one) replaced by its
    placeholder; every other field, the event name included, as it was. Most events hold no secret: one scan
    of all their text says so, and only an event it finds something in is scanned text by text."""
    clean = not may_hold_secret(texts_of(event), kept)
    redacted = _Redactor(fingerprint, kept, clean=clean).mapping(event)
    return {str(key): value for key, value in redacted.items()}


def reserved_refusal(event: Mapping[str, object]) -> Refused | None:
    """Why the (redacted) event may not be logged at all: no event name, or a field the log writes itself."""
    name = event.get("event")
    if not isinstance(name, str) or not name:
        return Refused(type(name).__name__, "the field 'event'", "must be a non-empty string naming what happened")
    for key in event:
        if key in RESERVED_KEYS:
            return Refused(name, f"the field {key!r}", "is written by the log itself")
    return None
