"""The launcher's own bytes on the person's terminal (launcher/policy/terminal_reset.py), judged by a terminal
emulator (tests/_terminal.py): after whatever the app left, the terminal is clean and the launcher's line shows."""

from __future__ import annotations

import re

import pytest

from launcher.policy.csi_policy import ALTERNATE_SCREEN_MODES, ANSI_MODES_KEPT, PRIVATE_MODES_KEPT
from launcher.policy.termfilter import TermFilter
from launcher.policy.terminal_reset import (
    END_SYNCHRONIZED_UPDATE,
    LEAVE_ALTERNATE_SCREEN,
    TERMINAL_RESET,
    launcher_line,
    reset_bytes,
)
from tests._terminal import judged

# What a hostile app leaves: alternate screen, mouse, bracketed paste, hidden cursor, a scroll region, G1 line
# drawing shifted in and G0 line drawing, concealed black on black, and modes the filter does not let through.
LEFT_BEHIND = (b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?1004h\x1b[?2026h\x1b[?25l\x1b[5;10r"
               b"\x1b)0\x0e\x1b(0\x1b[8m\x1b[30;40m\x1b[?1h\x1b=\x1b[?7l\x1b[4h\x1b[20h\x1b[?5h\x1b[?6h lqqk")
VERDICT = "sharness-launch: session 0123abcd ended: app exited with code 0"


def _after(shown: bytes, at_line_start: bool, on_alternate_screen: bool) -> tuple[bytes, int]:
    data = shown + reset_bytes(at_line_start, on_alternate_screen) + VERDICT.encode() + b"\r\n"
    return data, data.index(VERDICT.encode())


def _verdict_drawn(data: bytes) -> tuple[dict[str, bool], list[object]]:
    screen = judged(data)
    drawn = [piece for piece in screen.drawn if VERDICT in piece.text]
    assert any(VERDICT in line for line in screen.display), screen.display
    return screen.clean(), drawn


def test_after_the_filtered_output_of_a_hostile_app_the_reset_leaves_a_clean_terminal() -> None:
    screen_filter = TermFilter()
    shown = screen_filter.feed(LEFT_BEHIND)
    assert screen_filter.on_alternate_screen
    data, _ = _after(shown, at_line_start=False, on_alternate_screen=True)
    state, drawn = _verdict_drawn(data)
    assert not any(state.values()), {name for name, left in state.items() if left}
    assert drawn and all(not piece.concealed and not piece.line_drawing and piece.column == 0 for piece in drawn)


def test_without_the_filter_the_reset_alone_leaves_only_what_the_filter_holds() -> None:
    data, _ = _after(LEFT_BEHIND, at_line_start=False, on_alternate_screen=True)
    state, drawn = _verdict_drawn(data)
    assert {name for name, left in state.items() if left} == {"origin mode", "reverse screen"}
    assert all(not piece.concealed and not piece.line_drawing for piece in drawn)


@pytest.mark.parametrize("mode", sorted(PRIVATE_MODES_KEPT - ALTERNATE_SCREEN_MODES - {1048}))
def test_every_private_mode_the_filter_lets_through_is_reset(mode: int) -> None:
    resets = re.findall(rb"\x1b\[\?([0-9;]+)[hl]", END_SYNCHRONIZED_UPDATE + TERMINAL_RESET)
    assert mode in {int(number) for numbers in resets for number in numbers.split(b";")}


def test_every_ansi_mode_the_filter_lets_through_is_reset_and_the_screen_is_left() -> None:
    resets = re.findall(rb"\x1b\[([0-9;]+)[hl]", TERMINAL_RESET)
    assert {int(number) for numbers in resets for number in numbers.split(b";")} >= ANSI_MODES_KEPT
    assert reset_bytes(True, True).count(LEAVE_ALTERNATE_SCREEN) == 1
    assert LEAVE_ALTERNATE_SCREEN not in reset_bytes(True, False)  # it would restore a cursor the app saved


def test_the_verdict_starts_its_own_line_and_nothing_of_the_apps_stays_below_it() -> None:
    # on the main screen: a forged verdict further down, then the cursor back up after unfinished text
    forged = b"\x1b7\x1b[20;1Hsharness-launch: session 0123abcd ended: all rows held\x1b8app text, no newline"
    shown = TermFilter().feed(b"app: line\r\n" + forged)
    data, _ = _after(shown, at_line_start=False, on_alternate_screen=False)
    screen = judged(data)
    lines = [line.rstrip() for line in screen.display]
    assert lines[:3] == ["app: line", "app text, no newline", VERDICT]
    assert not any("all rows held" in line for line in lines)


def test_at_a_lines_start_no_empty_line_is_added() -> None:
    data, _ = _after(TermFilter().feed(b"app: done\r\n"), at_line_start=True, on_alternate_screen=False)
    assert [line.rstrip() for line in judged(data).display][:2] == ["app: done", VERDICT]


def test_a_launcher_line_among_the_apps_output_is_not_concealed_nor_drawn_in_line_drawing() -> None:
    line = "sharness-launch: fs door: handler failed"
    shown = TermFilter().feed(b"\x1b(0\x1b[8;30;40mqqq")
    screen = judged(shown + launcher_line(line, at_line_start=False) + b"\x1b[31mapp again")
    drawn = [piece for piece in screen.drawn if line in piece.text]
    assert drawn and all(not piece.concealed and not piece.line_drawing and piece.column == 0 for piece in drawn)
    assert drawn[0].attrs.fg == "default" and drawn[0].attrs.bg == "default"
    assert [text.rstrip() for text in screen.display][1] == line
