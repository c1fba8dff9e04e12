"""The strict JSON reader: each refusal class, with its pointer, and what it accepts."""

from __future__ import annotations

import pytest

from launcher.manifest import MAX_BYTES, MAX_DEPTH, MAX_SAFE_INTEGER, ManifestError, parse_strict


def refused(raw: bytes) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        parse_strict(raw)
    return caught.value


@pytest.mark.parametrize(
    ("raw", "pointer", "words"),
    [
        (b'{"a": 1, "a": 2}', "/a", "duplicate"),
        (b'{"x": [{"k": 1, "k": 1}]}', "/x/0/k", "duplicate"),
        (b'{"a/b~": {}, "a/b~": {}}', "/a~1b~0", "duplicate"),
        (b'{"a": 1, "\\u0061": 2}', "/a", "duplicate"),
        (b'{"n": 1.5}', "/n", "float"),
        (b'{"n": 1.0}', "/n", "float"),
        (b'{"n": 1e2}', "/n", "exponent"),
        (b'{"n": 1E+2}', "/n", "exponent"),
        (b'{"n": -0.0}', "/n", "float"),
        (b'[NaN]', "/0", "non-finite"),
        (b'[Infinity]', "/0", "non-finite"),
        (b'[-Infinity]', "/0", "non-finite"),
        (b"[9007199254740992]", "/0", "2^53"),
        (b"[-9007199254740992]", "/0", "2^53"),
        (b"[" + b"9" * 5000 + b"]", "/0", "2^53"),
        (b'["\\ud800"]', "/0", "surrogate"),
        (b'["\\udc00\\ud800"]', "/0", "surrogate"),
        (b'{"\\udfff": 1}', "", "surrogate"),
    ],
)
def test_refused_values_name_their_pointer(raw: bytes, pointer: str, words: str) -> None:
    error = refused(raw)
    assert error.pointer == pointer
    assert words in error.message
    assert error.hint


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"\xff{}", "UTF-8"),
        (b'{"a": "\xed\xa0\x80"}', "UTF-8"),  # a surrogate encoded in UTF-8 (CESU-8)
        (b'{"a": "\xc0\xaf"}', "UTF-8"),  # overlong '/'
        (b"\xef\xbb\xbf{}", "byte order mark"),
        (b"", "not JSON"),
        (b"{,}", "not JSON"),
        (b'{"a": 1,}', "not JSON"),
        (b"{'a': 1}", "not JSON"),
        (b'{"a": 01}', "not JSON"),
        (b'{"a": "\x01"}', "not JSON"),  # raw control character inside a string
        (b"{} {}", "not JSON"),
    ],
)
def test_refused_documents_point_at_the_root(raw: bytes, words: str) -> None:
    error = refused(raw)
    assert error.pointer == ""
    assert words in error.message


def test_size_limit_is_one_mebibyte() -> None:
    padded = b"[" + b" " * (MAX_BYTES - 2) + b"]"
    assert parse_strict(padded) == []
    assert "over the limit" in refused(padded + b" ").message


def test_depth_limit() -> None:
    assert parse_strict(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    error = refused(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert error.pointer == "/0" * MAX_DEPTH
    assert "deeper" in error.message


def test_very_deep_nesting_is_refused_before_the_parser_recurses() -> None:
    error = refused(b"[" * 200_000 + b"]" * 200_000)
    assert error.pointer == "" and "deeper" in error.message


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    assert parse_strict(b'["' + b"[" * 1000 + b'\\"{"]') == ["[" * 1000 + '"{']


def test_accepts_safe_integers_and_plain_values() -> None:
    document = parse_strict(b'{"a": [9007199254740991, -9007199254740991, 0, -0, true, null, "x"], "b": {}}')
    assert document == {"a": [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0, 0, True, None, "x"], "b": {}}
    assert type(document["a"][4]) is bool


def test_astral_characters_as_pairs_or_raw_are_the_same_string() -> None:
    assert parse_strict(b'["\\ud83d\\ude00"]') == parse_strict('["\U0001F600"]'.encode()) == ["\U0001F600"]
