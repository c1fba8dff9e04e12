"""A strict JSON reader: bytes in, plain Python values out, or ManifestError naming the JSON pointer.

Refuses what would make two readers disagree or the canonical form ambiguous: invalid UTF-8, a BOM,
duplicate keys, floats, exponents, NaN/Infinity, integers beyond ±(2^53−1), lone surrogates, documents
over 1 MiB or nested deeper than 32. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from launcher.manifest._errors import ManifestError, child
from pki.vocabulary import lone_surrogate

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1
# The C parser recurses once per level; anything this deep is refused before it runs.
_PRESCAN_DEPTH = 256
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class _Number:
    """A number the parser saw but the manifest refuses (float, exponent, constant, too large)."""

    text: str
    why: str


class _Pairs(list[tuple[str, Any]]):
    """An object's members in file order; turned into a dict once its pointer is known."""


def parse_strict(raw: bytes) -> Any:
    """Parse `raw` as strict JSON (see module docstring); raise ManifestError with a pointer on refusal."""
    text = _decode(raw)
    _prescan_depth(text)
    try:
        loose = json.loads(
            text,
            object_pairs_hook=_Pairs,
            parse_float=lambda s: _Number(s, "a float or exponent"),
            parse_int=_parse_int,
            parse_constant=lambda s: _Number(s, "a non-finite number"),
        )
    except json.JSONDecodeError as exc:
        raise ManifestError(
            "", f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "fix the JSON syntax (no comments, no trailing commas, strings in double quotes)",
        ) from None
    return _settle(loose, "", 1)


def _decode(raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        raise ManifestError("", f"file is {len(raw)} bytes, over the limit of {MAX_BYTES} (1 MiB)",
                            "a manifest is a short policy; move data out of it")
    if raw.startswith(_BOM):
        raise ManifestError("", "file starts with a UTF-8 byte order mark", "save it as UTF-8 without BOM")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError("", f"not UTF-8: invalid byte 0x{raw[exc.start]:02x} at offset {exc.start}",
                            "save the file as UTF-8") from None


def _prescan_depth(text: str) -> None:
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > _PRESCAN_DEPTH:
            raise ManifestError("", f"nesting deeper than {MAX_DEPTH} levels",
                                f"flatten the document to at most {MAX_DEPTH} levels")


def _parse_int(text: str) -> int | _Number:
    digits = text.lstrip("-")
    if len(digits) > 16 or int(digits) > MAX_SAFE_INTEGER:
        return _Number(text, "an integer beyond ±(2^53−1)")
    return int(text)


def _settle(value: Any, ptr: str, depth: int) -> Any:
    """Turn the loose parse into dicts and lists, refusing what the parser let through."""
    if isinstance(value, _Number):
        raise ManifestError(ptr, f"{value.text} is {value.why}; the manifest holds integers only",
                            f"write an integer between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}, "
                            "without fraction or exponent")
    if isinstance(value, str):
        _refuse_surrogate(value, ptr, "string")
        return value
    if isinstance(value, _Pairs | list) and depth > MAX_DEPTH:
        raise ManifestError(ptr, f"nesting deeper than {MAX_DEPTH} levels",
                            f"flatten the document to at most {MAX_DEPTH} levels")
    if isinstance(value, _Pairs):
        return _settle_object(value, ptr, depth)
    if isinstance(value, list):
        return [_settle(item, child(ptr, index), depth + 1) for index, item in enumerate(value)]
    return value


def _settle_object(pairs: _Pairs, ptr: str, depth: int) -> dict[str, Any]:
    settled: dict[str, Any] = {}
    for key, item in pairs:
        _refuse_surrogate(key, ptr, "key")
        if key in settled:
            raise ManifestError(child(ptr, key), f"duplicate key {key!r}",
                                "keep one of the members: readers disagree on which one wins")
        settled[key] = _settle(item, child(ptr, key), depth + 1)
    return settled


def _refuse_surrogate(text: str, ptr: str, what: str) -> None:
    found = lone_surrogate(text)
    if found is not None:
        raise ManifestError(ptr, f"a {what} holds the lone surrogate \\u{ord(found):04x}",
                            "pair each \\ud800-\\udbff escape with a \\udc00-\\udfff escape, or remove it")
