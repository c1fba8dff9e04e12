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


class _Redactor:
    def __init__(self, fingerprint: Fingerprint, kept: Kept | None) -> None:
        self.fingerprint = fingerprint
        self.kept = kept

    def value(self, value: object) -> object:
        if isinstance(value, str):
            return redact_text(value, self.fingerprint, self.kept)
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
        for key, item in value.items():
            shown = redact_text(key, self.fingerprint, self.kept) if isinstance(key, str) else key
            while shown in out:  # two keys that redact alike stay two fields
                shown = f"{shown}'"
            named = isinstance(shown, str) and secret_key_rule(shown) is not None
            out[shown] = self.whole(item) if named else self.value(item)
        return out


def redact_event(event: Mapping[str, object], fingerprint: Fingerprint,
                 kept: Kept | None = None) -> dict[str, object]:
    """The event with every secret (shaped like one, kept, or in a field named like one) replaced by its
    placeholder; every other field, the event name included, as it was."""
    redacted = _Redactor(fingerprint, kept).mapping(event)
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
