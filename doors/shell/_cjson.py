"""JSON for the `sh` client by the standard library's C accelerator alone: `_json`'s scanner and encoder, the
ones `json.loads` and `json.dumps` run, without the `json` package around them. Pure.

`sharness-launch sh` pays every import on every call, and `import json` loads `re` (with `enum`, `functools`,
`collections`) to compile patterns that only the pure-Python fallback scanner uses: ~10 ms of CPU per call on
this VM (docs/decisions/bench.md, "shquick"). The scanner takes the same options as `json.JSONDecoder()`, the
encoder those of `json.dumps` with compact separators, so the results are json's own; tests/doors/shell/
test_cjson.py compares them on a corpus, refusals included.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
WHITESPACE = " \t\n\r"


class _Rules:
    """What `_json.make_scanner` reads from a decoder: json.JSONDecoder()'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


# typeshed names the scanner's own type as its argument: any object with these attributes is what the C reads.
_scan = _json.make_scanner(_Rules())  # type: ignore[arg-type]


def _unencodable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# markers None is check_circular=False: what is encoded here is a tree just built or just parsed, never cyclic.
# A request: json.dumps(value, separators=(",", ":"), allow_nan=False).
_encode_request = _json.make_encoder(None, _unencodable, _json.encode_basestring_ascii, None, ":", ",", False,
                                     False, False)
# A frame printed by `sh --json`: json.dumps(value, ensure_ascii=False), its default separators.
_encode_shown = _json.make_encoder(None, _unencodable, _json.encode_basestring, None, ": ", ", ", False, False,
                                   True)


def loads(data: bytes | bytearray | str) -> Any:
    """The value of one JSON document (UTF-8 bytes or text), as json.loads gives it; ValueError otherwise."""
    text = (data if isinstance(data, str) else data.decode()).strip(WHITESPACE)
    try:
        value, end = _scan(text, 0)
    except StopIteration as stop:
        raise ValueError(f"not JSON: nothing a value starts with at character {stop.value}") from None
    if end != len(text):
        raise ValueError(f"not JSON: extra data at character {end}")
    return value


def dumps(value: Any) -> str:
    """`value` as compact ASCII JSON, json.dumps(value, separators=(",", ":"), allow_nan=False); TypeError or
    ValueError when it is not JSON."""
    return "".join(_encode_request(value, 0))


def dumps_shown(value: Any) -> str:
    """`value` as json.dumps(value, ensure_ascii=False) writes it (what `sh --json` prints)."""
    return "".join(_encode_shown(value, 0))
