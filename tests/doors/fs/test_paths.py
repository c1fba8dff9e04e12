"""Path validation and normalisation: refused before anything touches the disk."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors._refusal import Refusal
from doors.fs._paths import (
    MAX_COMPONENT_BYTES,
    MAX_DEPTH,
    MAX_PATH_BYTES,
    WorkspacePath,
    is_temp_name,
    parse_path,
    parse_prefix,
)


def _ok(raw: str) -> WorkspacePath:
    parsed = parse_path(raw)
    assert isinstance(parsed, WorkspacePath), parsed
    return parsed


def _refused(raw: str) -> Refusal:
    parsed = parse_path(raw)
    assert isinstance(parsed, Refusal), parsed
    return parsed


@pytest.mark.parametrize(("raw", "parts"), [
    ("a", ("a",)),
    ("a/b/c.txt", ("a", "b", "c.txt")),
    ("./a", ("a",)),
    ("a/./b", ("a", "b")),
    ("a//b", ("a", "b")),
    ("a/b/", ("a", "b")),
    ("", ()),
    (".", ()),
    ("./", ()),
    ("...", ("...",)),
    ("..a", ("..a",)),
    ("a..", ("a..",)),
    ("%2e%2e", ("%2e%2e",)),  # percent-decoding happens once, at the URL: this is a literal name
    ("héllo/日本.txt", ("héllo", "日本.txt")),
    ("a b", ("a b",)),
    ("a\\..\\b", ("a\\..\\b",)),  # a backslash is an ordinary character on Linux
])
def test_accepted_and_normalised(raw: str, parts: tuple[str, ...]) -> None:
    assert _ok(raw).parts == parts


@pytest.mark.parametrize("raw", ["..", "../x", "a/../b", "a/..", "./..", "a/b/../../.."])
def test_dotdot_is_within_root(raw: str) -> None:
    assert _refused(raw).row == "within_root"


@pytest.mark.parametrize("raw", ["/", "/etc/passwd", "//x"])
def test_absolute_is_within_root(raw: str) -> None:
    assert _refused(raw).row == "within_root"


@pytest.mark.parametrize("char", ["\x00", "\x01", "\n", "\r", "\t", "\x1b", "\x7f", "\x85", "\x9f", "\ud800"])
def test_control_characters_refused(char: str) -> None:
    refusal = _refused(f"a{char}b")
    assert refusal.row == "path"
    assert "U+" in refusal.detail


def test_component_length_limit_counts_utf8_bytes() -> None:
    assert _ok("a" * MAX_COMPONENT_BYTES)
    assert _refused("a" * (MAX_COMPONENT_BYTES + 1)).row == "path"
    # 'é' is two bytes in UTF-8: 128 of them is 256 bytes.
    assert _refused("é" * 128).row == "path"
    assert _ok("é" * 127)


def test_total_length_limit() -> None:
    component = "a" * 200
    fits = "/".join([component] * (MAX_PATH_BYTES // 201))
    assert _ok(fits)
    assert _refused("/".join([component] * 21)).detail.startswith("the path is")


def test_depth_limit() -> None:
    assert _ok("/".join(["d"] * MAX_DEPTH))
    assert "levels deep" in _refused("/".join(["d"] * (MAX_DEPTH + 1))).detail


def test_door_temp_names_refused() -> None:
    assert is_temp_name(".sh-fs-0123.tmp")
    assert _refused("x/.sh-fs-0123.tmp").row == "path"
    assert _ok(".sh-fs-0123.txt")


def test_within_and_parents() -> None:
    git = _ok(".git")
    assert _ok(".git/config").is_within(git)
    assert _ok(".git").is_within(git)
    assert not _ok(".github").is_within(git)
    assert _ok("a").is_within(_ok(""))
    assert _ok("a/b").parent == _ok("a")
    assert str(_ok("")) == "."


def test_parse_prefix() -> None:
    assert parse_prefix(".git/") == _ok(".git")
    with pytest.raises(ValueError, match="row path"):
        parse_prefix("../x")


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=12), max_size=8))
def test_normalised_paths_are_stable(parts: list[str]) -> None:
    parsed = parse_path("/".join(parts))
    if isinstance(parsed, WorkspacePath):
        again = parse_path(parsed.text)
        assert again == parsed
        assert ".." not in parsed.parts and "." not in parsed.parts and "" not in parsed.parts


@pytest.mark.parametrize(("raw", "code"), [
    ("invoice-\u202egnp.sh", "U+202E"),  # lists as invoice-hs.png
    ("src/a\u2066.py", "U+2066"),
    ("a\u200e", "U+200E"),
    ("a\u061c", "U+061C"),
    (".git\u200b/config", "U+200B"),  # looks like read_only .git/config
    (".gi\u200dt", "U+200D"),
    (".en\u2060v", "U+2060"),
    ("\ufeffsrc", "U+FEFF"),
    ("lo\u00adg", "U+00AD"),
    ("log\ufe0f", "U+FE0F"),
    ("a\U000e0041", "U+E0041"),
    ("notes\u2028.txt", "U+2028"),
    ("docs\u2029", "U+2029"),
    ("a\x85b", "U+0085"),
    ("a\x1b[2Jb", "U+001B"),
])
def test_names_a_person_would_misread_are_refused_naming_the_code_point(raw: str, code: str) -> None:
    refused = _refused(raw)
    assert (refused.status, refused.row) == (400, "path")
    assert code in refused.detail and "bidi" in refused.hint
    assert all(char.isprintable() for char in refused.detail)  # the refusal never carries the character


@pytest.mark.parametrize("raw", ["\ue000icon", "new-\U0001fae8.txt", "e\u0301t\u00e9", "Grüße", "\u00a0space"])
def test_private_use_unassigned_and_combining_names_stay_usable(raw: str) -> None:
    # Names on disk may hold these (Samba maps ':' to private use; an emoji newer than this Python's Unicode).
    assert _ok(raw).parts == (raw,)
