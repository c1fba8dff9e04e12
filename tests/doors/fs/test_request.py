"""URL paths (percent-decoded once), byte ranges and flags."""

from __future__ import annotations

import pytest

from doors._refusal import Refusal
from doors.fs._paths import WorkspacePath
from doors.fs._request import ByteRange, parse_flag, parse_length, parse_range, path_from_url


@pytest.mark.parametrize(("rest", "row"), [
    ("..%2Fetc%2Fpasswd", "within_root"),
    ("%2e%2e/x", "within_root"),
    ("%2Fetc", "within_root"),
    ("a%00b", "path"),
    ("a%0Ab", "path"),
    ("%ff%fe", "path"),
])
def test_encoded_attacks_refused(rest: str, row: str) -> None:
    parsed = path_from_url(rest)
    assert isinstance(parsed, Refusal) and parsed.row == row


def test_decoded_exactly_once() -> None:
    assert path_from_url("%252e%252e") == WorkspacePath(("%2e%2e",))
    assert path_from_url("caf%C3%A9/a%20b") == WorkspacePath(("café", "a b"))


def test_ranges() -> None:
    assert parse_range("bytes=0-9", None, None) == ByteRange(0, 9)
    assert parse_range("bytes=5-", None, None) == ByteRange(5)
    assert parse_range(None, "3", "4") == ByteRange(3, 6)
    assert parse_range(None, "3", None) == ByteRange(3)
    assert parse_range(None, None, None) is None
    for bad in ("bytes=9-1", "bytes=0-1,3-4", "items=0-1", "bytes=-5"):
        assert isinstance(parse_range(bad, None, None), str), bad
    assert isinstance(parse_range(None, "-1", None), str)
    assert isinstance(parse_range(None, "1", "x"), str)
    assert isinstance(parse_range(None, "1", "0"), str)


def test_range_bounds() -> None:
    assert ByteRange(0, 9).bounds(5) == (0, 5)
    assert ByteRange(2).bounds(5) == (2, 3)
    assert ByteRange(5).bounds(5) is None
    assert ByteRange(0).bounds(0) == (0, 0)


def test_flags_and_lengths() -> None:
    assert parse_flag(None) is False and parse_flag("1") is True and parse_flag("") is True
    assert parse_flag("false") is False and parse_flag("maybe") is None
    assert parse_length("12") == 12 and parse_length(None) is None and parse_length("-1") is None
