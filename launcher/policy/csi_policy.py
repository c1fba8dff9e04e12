"""Which CSI sequences of the app's output reach the person's terminal, and in what form. Pure.

A CSI is `ESC [`, an optional private marker (`<=>?`), parameters (digits, `;`, `:`), intermediates
(0x20-0x2F) and a final byte. The policy is an allow list of (marker, intermediates, final) with a rule for
the parameters; anything not listed is dropped. What it keeps: what a CLI agent, a prompt library or a TUI
draws with (colours, cursor moves, erasing on the visible screen, scroll regions, insert and delete) and the
modes below, each either harmless or put back when the relay closes (launcher/policy/terminal_reset.py).
What it drops: whatever acts past the visible screen or outlives the session, above all scrollback erasure
(`CSI 3 J`), and whatever makes the terminal report what it shows. Why, mode by mode:
docs/decisions/ptyrelay.md.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

CSI_MAX = 4096  # bytes of one CSI sequence, ESC [ and final byte included; a longer one is dropped
DECISIONS_CACHED, CACHED_LENGTH = 1024, 64  # a TUI repeats a few sequences: their decisions are remembered

# SM/RM (`CSI n h/l`). Kept: IRM (insert mode, curses' smir/rmir). Dropped: KAM (2, locks the keyboard),
# SRM (12, local echo: the person's typing would show, passwords too), LNM (20, newline mode), the rest.
ANSI_MODES_KEPT = frozenset({4})

# DECSET/DECRST (`CSI ? n h/l`). Every one kept is reset at close.
PRIVATE_MODES_KEPT = frozenset({
    1,  # DECCKM: application cursor keys (readline, vim, less)
    7,  # DECAWM: autowrap
    9, 1000, 1002, 1003,  # mouse reports: X10, normal, button-event, any-event tracking
    1004,  # focus in/out reports
    1005, 1006, 1015, 1016,  # mouse report encodings: UTF-8, SGR, urxvt, SGR-pixels
    12, 25,  # cursor blinking, cursor visible (cnorm/civis/cvvis)
    47, 1047, 1048, 1049,  # the alternate screen, and saving the cursor with it (smcup/rmcup)
    2004,  # bracketed paste
    2026,  # synchronized output (begin/end of a frame)
})
ALTERNATE_SCREEN_MODES = frozenset({47, 1047, 1049})
# Not kept, among others: 3 (DECCOLM: 80/132 columns, clears the screen and resizes the window), 5 (DECSCNM:
# the whole screen in reverse video), 6 (DECOM: origin mode), 8 (autorepeat), 40/45, 66-69 (keypad, backarrow,
# left-right margins), 80 (sixel scrolling), 1001 (highlight tracking, which waits for an answer), 1007,
# 1010/1011, 1034-1046 (meta and scroll keys), 1050-1061 (function-key modes), 2027 and newer.

_PARTS = re.compile(rb"\x1b\[([\x3c-\x3f]?)([\x30-\x3b]*)([\x20-\x2f]*)([\x40-\x7e])")
_NUMBERS = re.compile(rb"[0-9]{0,5}(?:;[0-9]{0,5})*")  # mode numbers (`:` sub-parameters are SGR's alone)
_ERASE = re.compile(rb"[012]?")  # ED and EL: below/above/all of the visible screen; 3 (scrollback) is dropped

Rule = Callable[[bytes, bytes, bytes], bytes | None]  # (marker, parameters, final) → the sequence to send


def _any(marker: bytes, params: bytes, final: bytes) -> bytes | None:
    return b""


def _no_params(marker: bytes, params: bytes, final: bytes) -> bytes | None:
    return b"" if not params else None


def _erase(marker: bytes, params: bytes, final: bytes) -> bytes | None:
    return b"" if _ERASE.fullmatch(params) else None


def _modes(marker: bytes, params: bytes, final: bytes) -> bytes | None:
    """The listed modes of a set/reset, the others left out; None when none is left."""
    if not _NUMBERS.fullmatch(params):
        return None
    kept = PRIVATE_MODES_KEPT if marker == b"?" else ANSI_MODES_KEPT
    modes = [number for number in params.split(b";") if number and int(number) in kept]
    return b"\x1b[" + marker + b";".join(modes) + final if modes else None


# (marker, intermediates, final) → rule. b"" in the result: the sequence passes as it came.
_KEPT: dict[tuple[bytes, bytes, int], Rule] = {
    **{(b"", b"", final): _any for final in b"@ABCDEFGHILMPSTXZ`abcdefmn"},
    # ICH, cursor moves, CHT, IL, DL, DCH, SU, SD, ECH, CBT, HPA, HPR, REP, DA, VPA, VPR, HVP, SGR, DSR
    **{(marker, b"", final): _erase for marker in (b"", b"?") for final in b"JK"},  # ED/EL, DECSED/DECSEL
    **{(marker, b"", final): _modes for marker in (b"", b"?") for final in b"hl"},  # SM/RM, DECSET/DECRST
    (b"", b"", ord("r")): _any,  # DECSTBM: the scroll region
    (b"", b"", ord("s")): _no_params,  # SCOSC (with parameters it is DECSLRM)
    (b"", b"", ord("u")): _no_params,  # SCORC (with a marker it is the kitty keyboard protocol: dropped)
    (b"?", b"", ord("n")): _any,  # DECDSR: status queries, answered into the app's own input
    (b">", b"", ord("c")): _any,  # DA2
    (b"=", b"", ord("c")): _any,  # DA3
    (b">", b"", ord("q")): _any,  # XTVERSION
    (b"", b" ", ord("q")): _any,  # DECSCUSR: the cursor's shape (reset at close)
    (b"", b"!", ord("p")): _no_params,  # DECSTR: soft reset
    (b"", b"$", ord("p")): _any,  # DECRQM: is an ANSI mode set?
    (b"?", b"$", ord("p")): _any,  # DECRQM: is a private mode set?
}

# The sequences the filter's fast path passes without asking: what _KEPT passes as it came (tested). Switches
# of the alternate screen are not among them: the filter follows those (alternate_screen_after).
_FAST_MODES = rb"(?:" + b"|".join(b"%d" % mode for mode in sorted(PRIVATE_MODES_KEPT - ALTERNATE_SCREEN_MODES,
                                                                   reverse=True)) + rb")"
SHORT_CSI_KEPT = (rb"\x1b\[(?:[0-9;:]{0,64}[@A-ILMPSTXZ`a-fmn]|[012]?[JK]|4[hl]|\?" + _FAST_MODES
                  + rb"(?:;" + _FAST_MODES + rb"){0,7}[hl])")


def screen_csi(sequence: bytes) -> bytes | None:
    """The form of a whole CSI sequence (ESC [ ... final) to send to the person's terminal; None: drop it."""
    parts = _PARTS.fullmatch(sequence)
    if parts is None or len(sequence) > CSI_MAX:
        return None
    marker, params, intermediates, final = parts.groups()
    rule = _KEPT.get((marker, intermediates, final[0]))
    if rule is None:
        return None
    form = rule(marker, params, final)
    return sequence if form == b"" else form


def alternate_screen_after(form: bytes) -> bool | None:
    """Whether a CSI that screen_csi passes switches to the alternate screen (True), back (False), or neither."""
    if not (form.startswith(b"\x1b[?") and form[-1:] in (b"h", b"l")):
        return None
    if not ALTERNATE_SCREEN_MODES & {int(number) for number in form[3:-1].split(b";") if number}:
        return None
    return form.endswith(b"h")


@functools.lru_cache(maxsize=DECISIONS_CACHED)
def _remembered(sequence: bytes) -> tuple[bytes | None, bool | None]:
    form = screen_csi(sequence)
    return form, None if form is None else alternate_screen_after(form)


def csi_decision(sequence: bytes) -> tuple[bytes | None, bool | None]:
    """screen_csi(sequence), and whether the form passed switches the alternate screen (remembered if short)."""
    if len(sequence) <= CACHED_LENGTH:
        return _remembered(sequence)
    form = screen_csi(sequence)
    return form, None if form is None else alternate_screen_after(form)
