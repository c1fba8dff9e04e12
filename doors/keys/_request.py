"""The release request's wire form: parse a JSON body into an Ask, or a 400 naming the field. Pure: no I/O."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from doors._refusal import DoorRefused, Refusal
from doors.keys._policy import WHO, Ask
from doors.keys._seal import PUBLIC_KEY_BYTES, key_id
from pki.vocabulary import SECRET_NAME_PATTERN

RELEASE_PATH = "/v0/keys/release"
MAX_BODY_BYTES = 8192  # the base64 public key is 1624 bytes; nothing else is large
_NAME = re.compile(SECRET_NAME_PATTERN)
_HOST = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
FIELDS = ("name", "host", "request_id", "issued_at", "public_key")


def _bad(field: str, detail: str) -> DoorRefused:
    return DoorRefused(Refusal(400, f"keys.request.{field}", WHO, detail,
                               f"send {{{', '.join(FIELDS)}}} as doors/keys/client.py does"))


def _text(body: dict[str, Any], field: str, pattern: re.Pattern[str]) -> str:
    value = body.get(field)
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        raise _bad(field, f"{field} must be a string matching {pattern.pattern}")
    return value


def _public_key(body: dict[str, Any]) -> bytes:
    value = body.get("public_key")
    if not isinstance(value, str) or len(value) > 2 * PUBLIC_KEY_BYTES:
        raise _bad("public_key", "public_key must be base64 text")
    try:
        wire = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _bad("public_key", "public_key is not valid base64") from None
    if len(wire) != PUBLIC_KEY_BYTES:
        raise _bad("public_key", f"public_key must be {PUBLIC_KEY_BYTES} bytes (ML-KEM-768 then X25519)")
    return wire


def parse_ask(body: Any, requester_role: str | None, requester_id: str) -> tuple[Ask, bytes]:
    """The Ask and the one-time public key's wire bytes, or DoorRefused 400 naming the bad field."""
    if not isinstance(body, dict):
        raise _bad("body", "the body must be a JSON object")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise _bad("body", f"unknown field(s): {unknown[:5]}")
    issued_at = body.get("issued_at")
    if not isinstance(issued_at, int) or isinstance(issued_at, bool) or not 0 <= issued_at < 2**53:
        raise _bad("issued_at", "issued_at must be whole seconds since the epoch")
    wire = _public_key(body)
    ask = Ask(requester_role, requester_id, _text(body, "name", _NAME), _text(body, "host", _HOST),
              _text(body, "request_id", _REQUEST_ID), issued_at, key_id(wire))
    return ask, wire
