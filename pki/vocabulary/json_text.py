"""JSON as Unicode text, from bytes a peer sent: the one parse of the doors' request bodies and the daemon's frames.

`json.loads` takes more than Unicode JSON: given bytes it decodes with `surrogatepass` (so UTF-8-encoded
surrogates pass), its grammar lets a `\\ud800` escape stand alone (a string no UTF-8 can hold: I-JSON, RFC 7493,
refuses it), and nesting past the interpreter's depth raises RecursionError, not ValueError. Each of those
reached a handler as a 500 or a dropped connection. Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Where json.loads may have left a lone surrogate: a \uD800-\uDFFF escape (a pair decodes to one code point).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# A surrogate code point in a str: what a lone escape decodes to (UTF-8 can hold none of them).
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_of(data: bytes) -> Any:
    """`data` parsed as JSON (None when empty); ValueError saying why it is not Unicode JSON: not UTF-8, not JSON,
    nested past the interpreter's depth, or a string holding a lone surrogate escape."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text) if text else None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text) and _holds_lone_surrogate(value):
        raise ValueError("a string holds a lone surrogate (a \\ud800-\\udfff escape not in a pair)")
    return value


def lone_surrogate(text: str) -> str | None:
    """The first code point of `text` no UTF-8 can hold (a surrogate, U+D800-U+DFFF, left alone), or None."""
    found = _SURROGATE.search(text)
    return found.group() if found else None


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in the parsed `value` (a key or a value) holds a lone surrogate."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if lone_surrogate(item) is not None:
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False
