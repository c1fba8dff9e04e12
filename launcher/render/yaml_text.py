"""JSON-shaped data (dicts, lists, str, int, bool, None) as block YAML. Pure.

Every string is written double-quoted with JSON's escapes, which YAML's double-quoted style reads the same
way, so no value changes type or meaning ("no", "0755", "1e3" stay strings). Keys made only of letters, digits
and `._/-` are written plain. tests/launcher/render hold it to a YAML parser: load(dump(x)) == x.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")


def _key(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) else json.dumps(key)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    raise TypeError(f"not JSON-shaped: {type(value).__name__}")


def _lines(value: Any, indent: str) -> list[str]:
    """`value` as the lines of a block, each starting with `indent`."""
    if isinstance(value, dict):
        if not value:
            return [f"{indent}{{}}"]
        lines = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{indent}{_key(key)}:")
                lines += _lines(item, indent + "  ")
            else:
                lines.append(f"{indent}{_key(key)}: {_inline(item)}")
        return lines
    if isinstance(value, list):
        if not value:
            return [f"{indent}[]"]
        lines = []
        for item in value:
            block = _lines(item, indent + "  ")
            lines.append(f"{indent}- {block[0][len(indent) + 2:]}")
            lines += block[1:]
        return lines
    return [f"{indent}{_scalar(value)}"]


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump_all(documents: list[dict[str, Any]]) -> str:
    """The documents as one YAML stream, each after a `---` line."""
    return "".join("---\n" + "\n".join(_lines(document, "")) + "\n" for document in documents)
