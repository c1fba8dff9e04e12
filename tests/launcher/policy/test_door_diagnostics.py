"""A door's stderr as the launcher shows it (launcher/policy/door_diagnostics.py): inert, prefixed, bounded."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launcher.policy.door_diagnostics import (
    BURST_LINES,
    HELD_BYTES,
    LINE_CHARS,
    SESSION_LINES,
    DoorDiagnostics,
    inert,
)

PREFIX = "sharness-launch: fs door: "


@pytest.mark.parametrize(("written", "shown"), [
    ("plain text, café 日本語 🙂", "plain text, café 日本語 🙂"),
    ("\x1b[2J\x1b]52;c;eA==\x07", "\\x1b[2J\\x1b]52;c;eA==\\x07"),  # no escape sequence acts
    ("a\rb\x08c\td\x00\x7f\x85", "a\\x0db\\x08c\\x09d\\x00\\x7f\\x85"),  # nor any control
    ("abc\u202edcba\u2066x\u200by\u00adz", "abc\\u202edcba\\u2066x\\u200by\\xadz"),  # bidi, zero-width: visible
    ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
])
def test_inert_shows_every_control_and_format_character_as_an_escape(written: str, shown: str) -> None:
    assert inert(written) == shown


@given(st.text())
def test_inert_text_has_no_control_or_format_character(text: str) -> None:
    assert all(unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn") for char in inert(text))


def test_each_line_is_prefixed_with_the_doors_role_and_held_until_it_ends() -> None:
    lines = DoorDiagnostics("fs", now=0)
    assert lines.feed(b"handler for GET /v0/fs/files/\x1b[31mx failed\nan unfini", 0) == [
        PREFIX + "handler for GET /v0/fs/files/\\x1b[31mx failed"]
    assert lines.feed(b"shed line\r\n\n  \n", 0) == [PREFIX + "an unfinished line"]  # blank lines are not shown
    assert lines.feed(b"no newline at the end", 0) == []
    assert lines.end(0) == [PREFIX + "no newline at the end"]
    assert lines.statistics().lines == 3 and lines.statistics().shown == 3


def test_a_long_line_is_cut_and_its_rest_skipped() -> None:
    lines = DoorDiagnostics("net", now=0)
    shown = lines.feed(b"y" * 300 + b"\n", 0)
    assert shown == ["sharness-launch: net door: " + "y" * (LINE_CHARS - 1) + "…"]
    endless = lines.feed(b"z" * (HELD_BYTES * 3), 0)  # never ends: shown cut once, nothing held past the cap
    assert len(endless) == 1 and endless[0].endswith("…")
    assert lines.feed(b"z" * HELD_BYTES + b"\nnext\n", 0) == ["sharness-launch: net door: next"]
    long_line = b"w" * (HELD_BYTES * 2) + b"\nafter\n"
    for size in (1000, HELD_BYTES, HELD_BYTES + 1, len(long_line)):
        pieces = DoorDiagnostics("net", now=0)
        shown = [line for at in range(0, len(long_line), size) for line in pieces.feed(long_line[at:at + size], 0)]
        assert shown == ["sharness-launch: net door: " + "w" * (LINE_CHARS - 1) + "…",
                         "sharness-launch: net door: after"], size


def test_a_burst_is_shown_then_one_line_a_second_and_the_gap_is_said() -> None:
    lines = DoorDiagnostics("fs", now=100)
    shown = lines.feed(b"".join(b"line %d\n" % n for n in range(BURST_LINES + 5)), 100)
    assert shown[:BURST_LINES] == [PREFIX + f"line {n}" for n in range(BURST_LINES)]
    assert shown[BURST_LINES:] == [PREFIX + "(more lines held back: 10 are shown at once, then 1 a second)"]
    assert lines.feed(b"late\n", 100.5) == []  # half a second: not yet
    assert lines.feed(b"later\n", 101.0) == [PREFIX + "(6 line(s) not shown)", PREFIX + "later"]
    seen = lines.statistics()
    assert (seen.lines, seen.shown, seen.held_back) == (BURST_LINES + 7, BURST_LINES + 1, 6)


def test_a_door_shows_at_most_its_session_lines() -> None:
    lines = DoorDiagnostics("fs", now=0)
    shown = [line for second in range(SESSION_LINES + 50) for line in lines.feed(b"x\n", second * 10.0)]
    assert shown.count(PREFIX + "x") == SESSION_LINES
    assert shown[-1] == PREFIX + "(no more of its lines are shown in this session; the audit log counts them)"
    assert lines.statistics().held_back == 50


@given(st.binary(max_size=10000), st.lists(st.integers(0, 10000), max_size=8))
def test_what_is_shown_does_not_depend_on_how_the_reads_were_split(data: bytes, cuts: list[int]) -> None:
    whole = DoorDiagnostics("fs", now=0)
    expected = whole.feed(data, 0) + whole.end(0)
    split = DoorDiagnostics("fs", now=0)
    bounds = [0, *sorted(min(cut, len(data)) for cut in cuts), len(data)]
    shown = [line for start, stop in itertools.pairwise(bounds) for line in split.feed(data[start:stop], 0)]
    # a CR LF split between two reads may count as two line ends: only blank lines differ, and those are not shown
    assert shown + split.end(0) == expected
    assert all(line.startswith("sharness-launch: fs door: ") and inert(line) == line for line in expected)
