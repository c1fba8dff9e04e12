"""The status fd's messages, door → launcher: one compact JSON object per SOCK_SEQPACKET message.

`{"type": "ready"}`, `{"type": "audit", "event": {...}}`, `{"type": "lost"}`, `{"type": "fatal", "detail": "..."}`,
and from the keys door `{"type": "forbid", "name", "value"}` and `{"type": "fingerprint", "fingerprint": {...}}`
(one part of the kept secrets' fingerprint, doors/_secret_match.py, sent before ready), each at most
MAX_STATUS_BYTES; any of them may carry `"dropped_before": N` (events of the door that never reached the
launcher since its last message).
Pure: the sender (doors/_status.py) and the reader (launcher/lifecycle/supervise.py) share it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_STATUS_BYTES = 64 * 1024
MAX_FATAL_DETAIL_CHARS = 4096
READY, AUDIT, LOST, FORBID, FATAL = "ready", "audit", "lost", "forbid", "fatal"
FINGERPRINT = "fingerprint"
STATUS_TYPES: tuple[str, ...] = (READY, AUDIT, LOST, FORBID, FINGERPRINT, FATAL)
DROPPED_BEFORE = "dropped_before"
# json.dumps with arguments builds an encoder per call; one made once encodes the same bytes.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)


def encode_status(message: dict[str, Any]) -> bytes:
    """Compact JSON of `message`; an oversized audit event is replaced by a marker naming its kind and size."""
    data = _ENCODER.encode(message).encode()
    if len(data) <= MAX_STATUS_BYTES:
        return data
    event = message.get("event")
    kind = event.get("kind") if isinstance(event, dict) else None
    marker = {"type": message.get("type"), "event": {"kind": kind, "truncated": True, "bytes": len(data)}}
    return json.dumps(marker, separators=(",", ":")).encode()[:MAX_STATUS_BYTES]


def decode_status(data: bytes) -> dict[str, Any] | None:
    """The message as a dict, or None when `data` is not one JSON object (the launcher audits it as malformed)."""
    try:
        decoded = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        return None
    return decoded if isinstance(decoded, dict) else None


def ready_message() -> dict[str, Any]:
    """The door listens and may be called."""
    return {"type": READY}


def audit_message(event: dict[str, Any]) -> dict[str, Any]:
    """One audit event for the launcher's log (the launcher sets its role)."""
    return {"type": AUDIT, "event": event}


def fatal_message(detail: str) -> dict[str, Any]:
    """The door is about to exit because of `detail` (cut to MAX_FATAL_DETAIL_CHARS)."""
    return {"type": FATAL, "detail": detail[:MAX_FATAL_DETAIL_CHARS]}


def lost_message() -> dict[str, Any]:
    """Nothing but the count of what was lost (`dropped_before`), when no event is there to carry it."""
    return {"type": LOST}


def forbid_message(name: str, value: str) -> dict[str, Any]:
    """A value the keys door keeps, for the audit log to redact from now on."""
    return {"type": FORBID, "name": name, "value": value}


def fingerprint_message(part: dict[str, Any]) -> dict[str, Any]:
    """One part of the kept secrets' fingerprint (never a value), for the launcher to hand on."""
    return {"type": FINGERPRINT, "fingerprint": part}
