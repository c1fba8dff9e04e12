"""pki/vocabulary/sid.py: the session id's syntax, its check and its generator."""

from __future__ import annotations

import re

import pytest

from pki.vocabulary import SID_LENGTH, SID_PATTERN, new_sid, valid_sid

VALID = ["0123abcd", "00000000", "ffffffff", "deadbeef"]
INVALID = [
    "", "0123abc", "0123abcde", "0123ABCD", "0123abcg", "0123abcd\n", "\n0123abcd", " 0123abcd", "0123abcd ",
    "0123-bcd", "../../etc", "0123abc\x00", "０１２３abcd", "٠١٢٣abcd", "0123abcd/x", ".new-0123",
]


@pytest.mark.parametrize("sid", VALID)
def test_a_session_id_is_valid(sid: str) -> None:
    assert valid_sid(sid)


@pytest.mark.parametrize("text", INVALID)
def test_anything_else_is_not(text: str) -> None:
    assert not valid_sid(text)


def test_new_ids_are_valid_and_random() -> None:
    ids = {new_sid() for _ in range(64)}
    assert all(valid_sid(sid) and len(sid) == SID_LENGTH for sid in ids)
    assert len(ids) == 64


def test_the_pattern_composes_into_names() -> None:
    name = re.compile(rf"^sh-({SID_PATTERN})-[a-z]+$")
    match = name.match("sh-0123abcd-app")
    assert match is not None and match.group(1) == "0123abcd"
    assert name.match("sh-0123abc-app") is None
