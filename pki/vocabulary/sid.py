"""The session id: 8 lowercase hex characters, from `secrets.token_hex(4)`; every session name embeds it."""

from __future__ import annotations

import re

SID_BYTES = 4
SID_LENGTH = 2 * SID_BYTES
SID_PATTERN = f"[0-9a-f]{{{SID_LENGTH}}}"  # for composing the patterns of names that carry a sid
_SID = re.compile(SID_PATTERN)


def valid_sid(text: str) -> bool:
    """Whether `text` is exactly a session id (nothing before or after, no newline)."""
    return isinstance(text, str) and _SID.fullmatch(text) is not None


def new_sid() -> str:
    """A fresh random session id."""
    import secrets  # here: only the launcher makes one, and every process imports the vocabulary

    return secrets.token_hex(SID_BYTES)
