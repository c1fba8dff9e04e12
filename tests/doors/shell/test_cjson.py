"""doors/shell/_cjson.py: `_json`'s scanner and encoder alone give what json.loads and json.dumps give."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from doors.shell._cjson import dumps, dumps_shown, loads

DOCUMENTS = [
    '{"seq":1,"stream":"stdout","length":5}', '{"final":{"exit_code":0,"signal":null,"timed_out":false}}',
    ' {"a": [1, 2.5, -3e5, true, false, null, "\\u00e9\\n\\ud83d\\ude00"]}\n', '"x"', "0", "-0.0", "1e400",
    "NaN", "-Infinity", "[]", "{}", '{"a":{"b":{"c":[[[]]]}}}', '"caf\u00e9"', '{"k":"a\\"b\\\\c\\/d"}',
    '{"dup":1,"dup":2}', "12345678901234567890123",
]
REFUSED = ["", " ", '{"a":1}x', "[1,]", "{'a':1}", '{"a":1', '"\x01"', "tru", "[1] [2]", '"\\x"', "01"]


def _same(left: Any, right: Any) -> bool:
    """Equal, NaN equal to NaN, and the same types all the way down (1 is not 1.0, True is not 1)."""
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_a_document_reads_as_json_reads_it(document: str) -> None:
    assert _same(loads(document), json.loads(document))
    assert _same(loads(document.encode()), json.loads(document.encode()))


@pytest.mark.parametrize("document", REFUSED)
def test_what_json_refuses_is_refused(document: str) -> None:
    with pytest.raises(ValueError):
        json.loads(document)
    with pytest.raises(ValueError):
        loads(document)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(ValueError):
        loads(b'"\xff"')


VALUES: list[Any] = [{"argv": ["true"]}, {"script": "echo 'a\"b' \\ \u00e9 \x00 \u2028", "timeout_ms": 5000,
                                           "cwd": "src/..", "tty": True, "apply": False},
                     {"nested": [{"a": None}, [], {}], "n": -1, "f": 0.5, "big": 10**30}]


@pytest.mark.parametrize("value", VALUES)
def test_a_request_is_written_as_compact_json_dumps_writes_it(value: Any) -> None:
    assert dumps(value) == json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert dumps_shown(value) == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("value", [float("nan"), {"a": float("inf")}, {"a": b"bytes"}, {1: object()}, {(1,): 2}])
def test_what_is_not_json_is_refused_on_the_way_out(value: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        dumps(value)
