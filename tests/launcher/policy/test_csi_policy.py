"""The CSI allow list (launcher/policy/csi_policy.py): what passes as it came, what is rewritten, what is dropped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launcher.policy.csi_policy import (
    ANSI_MODES_KEPT,
    PRIVATE_MODES_KEPT,
    SHORT_CSI_KEPT,
    alternate_screen_after,
    screen_csi,
)

KEPT = [
    b"\x1b[m", b"\x1b[0;1;38;5;208;48:2::1:2:3m", b"\x1b[H", b"\x1b[10;5H", b"\x1b[2A", b"\x1b[@", b"\x1b[3P",
    b"\x1b[5X", b"\x1b[2L", b"\x1b[M", b"\x1b[S", b"\x1b[2T", b"\x1b[12d", b"\x1b[4G", b"\x1b[3b", b"\x1b[Z",
    b"\x1b[J", b"\x1b[0J", b"\x1b[1J", b"\x1b[2J", b"\x1b[K", b"\x1b[2K", b"\x1b[?2K",  # the visible screen only
    b"\x1b[3;20r", b"\x1b[r", b"\x1b[s", b"\x1b[u",
    b"\x1b[6n", b"\x1b[5n", b"\x1b[?6n", b"\x1b[c", b"\x1b[>c", b"\x1b[=c", b"\x1b[>q",  # queries
    b"\x1b[?2026$p", b"\x1b[4$p", b"\x1b[2 q", b"\x1b[!p",
    b"\x1b[4h", b"\x1b[4l", b"\x1b[?25l", b"\x1b[?25h", b"\x1b[?1049h", b"\x1b[?1000;1006h", b"\x1b[?2004h",
    b"\x1b[?1h", b"\x1b[?7l", b"\x1b[?12h", b"\x1b[?2026h", b"\x1b[?1004h",
]

DROPPED = [
    (b"\x1b[3J", "scrollback erasure"), (b"\x1b[?3J", "scrollback erasure"), (b"\x1b[2;3J", "ED with two"),
    (b"\x1b[21t", "XTWINOPS: report the title"), (b"\x1b[8;100;200t", "resize"), (b"\x1b[5i", "media copy"),
    (b"\x1b[?3h", "DECCOLM"), (b"\x1b[?5h", "reverse screen"), (b"\x1b[?6h", "origin mode"),
    (b"\x1b[?1001h", "highlight tracking"), (b"\x1b[?69h", "left-right margins"),
    (b"\x1b[2h", "KAM locks the keyboard"), (b"\x1b[12l", "SRM local echo"), (b"\x1b[20h", "LNM"),
    (b"\x1b[>1u", "kitty keyboard push"), (b"\x1b[<u", "kitty keyboard pop"), (b"\x1b[=1;1u", "kitty flags"),
    (b"\x1b[?u", "kitty keyboard query"), (b"\x1b[>4;2m", "modifyOtherKeys"), (b"\x1b[>1p", "pointer mode"),
    (b"\x1b[3g", "clear every tab stop"), (b"\x1b[1;1;1;1;1;1*y", "DECRQCRA reads the screen"),
    (b"\x1b[61\"p", "DECSCL"), (b"\x1b[2$~", "status line"), (b"\x1b[1$}", "write to the status line"),
    (b"\x1b[1;1;5;5$v", "DECCRA"), (b"\x1b[1$t", "DECRARA"), (b"\x1b[1;2s", "DECSLRM"), (b"\x1b[?1049s", "XTSAVE"),
    (b"\x1b[?1049r", "XTRESTORE"), (b"\x1b[1q", "LEDs"), (b"\x1b[4;1y", "DECTST"), (b"\x1b[x", "DECREQTPARM"),
    (b"\x1b[1 2m", "a parameter after an intermediate"), (b"\x1b[1?h", "a marker after a parameter"),
    (b"\x1b]0m", "not a CSI"), (b"\x1b[1m\x1b[2m", "two sequences"),
]


@pytest.mark.parametrize("sequence", KEPT, ids=[repr(seq) for seq in KEPT])
def test_kept_sequences_pass_as_they_came(sequence: bytes) -> None:
    assert screen_csi(sequence) == sequence


@pytest.mark.parametrize(("sequence", "why"), DROPPED, ids=[why for _, why in DROPPED])
def test_dropped_sequences(sequence: bytes, why: str) -> None:
    assert screen_csi(sequence) is None, why


def test_a_set_or_reset_keeps_only_the_listed_modes() -> None:
    assert screen_csi(b"\x1b[?1049;5;1000h") == b"\x1b[?1049;1000h"
    assert screen_csi(b"\x1b[4;12;20l") == b"\x1b[4l"
    assert screen_csi(b"\x1b[?;25;99999l") == b"\x1b[?25l"
    assert screen_csi(b"\x1b[?3;5h") is None  # none left
    assert screen_csi(b"\x1b[?1:2h") is None  # sub-parameters are SGR's alone


@given(st.from_regex(SHORT_CSI_KEPT, fullmatch=True))
def test_what_the_fast_path_passes_the_policy_passes_as_it_came(sequence: bytes) -> None:
    assert screen_csi(sequence) == sequence
    assert alternate_screen_after(sequence) is None  # the filter must see every switch of the screen


@given(st.lists(st.integers(0, 9999), min_size=1, max_size=6), st.sampled_from([b"", b"?"]), st.sampled_from(b"hl"))
def test_a_mode_sequence_passes_exactly_its_listed_modes(modes: list[int], marker: bytes, final: int) -> None:
    sequence = b"\x1b[" + marker + b";".join(b"%d" % mode for mode in modes) + bytes((final,))
    listed = PRIVATE_MODES_KEPT if marker else ANSI_MODES_KEPT
    kept = [mode for mode in modes if mode in listed]
    form = screen_csi(sequence)
    assert form == (b"\x1b[" + marker + b";".join(b"%d" % mode for mode in kept) + bytes((final,)) if kept else None)


def test_alternate_screen_switches_are_recognised() -> None:
    assert alternate_screen_after(b"\x1b[?1049h") is True
    assert alternate_screen_after(b"\x1b[?1000;47l") is False
    assert alternate_screen_after(b"\x1b[?1047h") is True
    assert alternate_screen_after(b"\x1b[?25h") is None and alternate_screen_after(b"\x1b[4h") is None
    assert alternate_screen_after(b"\x1b[31m") is None
