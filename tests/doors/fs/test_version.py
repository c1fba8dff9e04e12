"""Etags and the If-Match / If-None-Match precondition (a mismatch is 409)."""

from __future__ import annotations

from doors.fs._version import etag_of, version_conflict


def test_etag_changes_with_every_field() -> None:
    base = etag_of(1, 2, 3, 4, 5)
    assert base.startswith('"') and base.endswith('"')
    assert base == etag_of(1, 2, 3, 4, 5)
    others = {etag_of(9, 2, 3, 4, 5), etag_of(1, 9, 3, 4, 5), etag_of(1, 2, 9, 4, 5), etag_of(1, 2, 3, 9, 5),
              etag_of(1, 2, 3, 4, 9)}
    assert base not in others and len(others) == 5


def test_no_precondition_holds() -> None:
    assert version_conflict(None, None, None) is None
    assert version_conflict(None, None, '"a"') is None


def test_if_match() -> None:
    assert version_conflict('"a"', None, '"a"') is None
    assert version_conflict('"b", "a"', None, '"a"') is None
    assert version_conflict("*", None, '"a"') is None
    assert "version" in (version_conflict('"b"', None, '"a"') or "")
    assert "nothing" in (version_conflict('"a"', None, None) or "")
    assert version_conflict("*", None, None) is not None
    assert version_conflict('W/"a"', None, '"a"') is not None  # weak tags never match a write
    assert version_conflict("", None, '"a"') is not None


def test_if_none_match() -> None:
    assert version_conflict(None, "*", None) is None
    assert version_conflict(None, "*", '"a"') is not None
    assert version_conflict(None, '"a"', '"a"') is not None
    assert version_conflict(None, '"b"', '"a"') is None
