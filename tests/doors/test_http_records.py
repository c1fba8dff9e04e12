"""A request's JSON body: parsed, or refused with 400 `http.json` naming why, lone surrogates included."""

from __future__ import annotations

import pytest

from doors._http._records import Request
from doors._refusal import DoorRefused


def _request(body: bytes) -> Request:
    return Request(method="POST", target="/v0/shell/run", path="/v0/shell/run", body=body)


@pytest.mark.parametrize("body", [
    b'{"argv": ["echo", "\\ud800"]}', b'{"script": "a\\udfffb"}', b'{"env": {"X": "\\uDBFF"}}',
    b'{"\\ud800": 1}', b'[[[{"cwd": ["x", "\\udc00"]}]]]', b'"\\ud83d"', b'{"a": "\\ude00\\ud83d"}',
])
def test_a_lone_surrogate_anywhere_is_refused(body: bytes) -> None:
    with pytest.raises(DoorRefused) as refused:
        _request(body).json()
    assert (refused.value.refusal.status, refused.value.refusal.row) == (400, "http.json")
    assert "surrogate" in refused.value.refusal.detail


@pytest.mark.parametrize(("body", "value"), [
    (b'{"argv": ["echo", "\\ud83d\\ude00"]}', {"argv": ["echo", "\U0001F600"]}),  # a pair is one code point
    (b'{"s": "\\\\ud800"}', {"s": "\\ud800"}),  # an escaped backslash, then text
    (b'{"s": "\xf0\x9f\x98\x80 \\u00e9"}', {"s": "\U0001F600 \u00e9"}),
    (b"", None),
])
def test_unicode_text_is_taken(body: bytes, value: object) -> None:
    assert _request(body).json() == value


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(DoorRefused) as refused:
        _request(b'{"s": "\xed\xa0\x80"}').json()  # a surrogate encoded as UTF-8 bytes
    assert refused.value.refusal.row == "http.json"


def test_json_in_another_encoding_is_refused() -> None:
    with pytest.raises(DoorRefused) as refused:
        _request('{"s": "x"}'.encode("utf-16")).json()
    assert refused.value.refusal.row == "http.json"


def test_json_nested_past_the_interpreter_is_refused() -> None:
    with pytest.raises(DoorRefused) as refused:
        _request(b"[" * 200_000).json()
    assert refused.value.refusal.row == "http.json" and "nested too deeply" in refused.value.refusal.detail
