"""An independent RFC 8785 serialiser for integer-only documents, used as a test oracle.

Written from the RFC, not from rfc8785's code: keys sorted by UTF-16 code units, strings through the
standard library's JSON escaper (which escapes exactly what RFC 8785 requires once ASCII-only is off).
"""

from __future__ import annotations

import json
from typing import Any


def oracle_canonical(value: Any) -> bytes:
    """Canonical bytes of `value` (dict, list, str, int, bool, None)."""
    return _text(value).encode("utf-8")


def _text(value: Any) -> str:
    if isinstance(value, dict):
        members = sorted(value.items(), key=lambda item: item[0].encode("utf-16-be"))
        return "{" + ",".join(f"{_string(key)}:{_text(item)}" for key, item in members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(item) for item in value) + "]"
    if isinstance(value, str):
        return _string(value)
    return json.dumps(value)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
