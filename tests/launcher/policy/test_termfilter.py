"""The screen filter (launcher/policy/termfilter.py): sans-IO, every sequence whole and split at every byte.

The properties: the output does not depend on where the input was split; whatever the input, the output is
only kept pieces (text, BEL BS HT LF CR, allowed CSI, the short ESC sequences); well-formed text passes as it is.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.lifecycle.ptyrelay import Channel
from launcher.policy.termfilter import CSI_MAX, REPLACEMENT, State, TermFilter, screen_csi

ESC = b"\x1b"
BEL = b"\x07"
ST = b"\x1b\\"

KEPT_PIECE = re.compile(  # the output's grammar: anything else reaching the terminal is a bug
    rb"[\x07-\x0a\x0d\x20-\x7e]"
    rb"|\xc2[\xa0-\xbf]|[\xc3-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
    rb"|\x1b\[[\x30-\x3f]*(?:[\x20-\x2f]+[\x40-\x7e]|[\x40-\x68\x6a-\x73\x75-\x7e])"
    rb"|\x1b[78=>M]|\x1b[()][0B]")
KEPT_STREAM = re.compile(b"(?:" + KEPT_PIECE.pattern + b")*")


def whole(data: bytes) -> bytes:
    term = TermFilter()
    return term.feed(data) + term.end()


def in_pieces(pieces: list[bytes]) -> bytes:
    term = TermFilter()
    return b"".join(term.feed(piece) for piece in pieces) + term.end()


def assert_every_split(data: bytes, expected: bytes) -> None:
    """`data` whole, split once at every byte, and one byte at a time: all give `expected`."""
    assert whole(data) == expected
    for cut in range(len(data) + 1):
        assert in_pieces([data[:cut], data[cut:]]) == expected, cut
    assert in_pieces([data[i:i + 1] for i in range(len(data))]) == expected


# What the app writes → what reaches the person. Each case is checked whole and at every split point.
CASES = [
    # text, kept controls, UTF-8
    (b"hello, world\r\n\tx\by" + BEL, b"hello, world\r\n\tx\by" + BEL),
    ("café — 日本語 🙂 e\u0301 \u00a0".encode(), "café — 日本語 🙂 e\u0301 \u00a0".encode()),
    (b"a\x00b\x01c\x05d\x0be\x0cf\x0eg\x0fh\x18i\x1aj\x7fk", b"abcdefghijk"),  # NUL ENQ VT FF SO SI CAN SUB DEL
    # CSI: colours, cursor, erase, modes
    (b"\x1b[31mred\x1b[0m \x1b[1;38;5;208mX\x1b[38;2;1;2;3mY\x1b[m",
     b"\x1b[31mred\x1b[0m \x1b[1;38;5;208mX\x1b[38;2;1;2;3mY\x1b[m"),
    (b"\x1b[H\x1b[2J\x1b[10;5H\x1b[K\x1b[2A\x1b[?25l\x1b[?1049h\x1b[?2004h\x1b[6n\x1b[c\x1b[2 q",
     b"\x1b[H\x1b[2J\x1b[10;5H\x1b[K\x1b[2A\x1b[?25l\x1b[?1049h\x1b[?2004h\x1b[6n\x1b[c\x1b[2 q"),
    # what erases the scrollback, reconfigures the terminal past the session or makes it report the screen
    (b"a\x1b[3Jb\x1b[?3;5;6hc\x1b[12l\x1b[2h\x1b[20hd\x1b[>1u\x1b[>4;2m\x1b[3ge\x1b[1;1;1;1*yf\x1b[61\"pg",
     b"abcdefg"),
    (b"\x1b[?1049;5;1000h\x1b[4;12h\x1b[?25;3l", b"\x1b[?1049;1000h\x1b[4h\x1b[?25l"),  # the kept modes only
    (b"a\x1b[21tb\x1b[8;100;200tc\x1b[5id\x1b[?5ie\x1b[22;0tf", b"abcdef"),  # window ops, title report, print
    (b"a\x1b[1$2mb\x1b[1\x1b[31mc", b"ab\x1b[31mc"),  # malformed (parameter after intermediate), abandoned
    (b"\x1b[3\r\n1mx", b"\r\n\x1b[31mx"),  # a control inside a CSI is executed where it stands
    (b"\x1b[31\x18mx\x1b[32\x1amy", b"mxmy"),  # CAN, SUB cancel it
    (b"\x1b[31\xc3\xa9m", b"\xc3\xa9m"),  # a byte no CSI holds ends it
    # 8-bit CSI and C1 controls, raw and UTF-8-encoded
    (b"\x9b31mX\xc2\x9b32mY", b"\x1b[31mX\x1b[32mY"),
    (b"a\x84b\x85c\x8ed\x9ae\x9cf\xc2\x85g\xc2\x9ah", b"abcdefgh"),
    # OSC: title, clipboard, hyperlink, cwd, colours; BEL or ST ends it
    (b"\x1b]0;title\x07\x1b]2;title" + ST + b"\x1b]52;c;c2gtYXR0YWNr\x07end", b"end"),
    (b"\x1b]8;;https://evil.example/\x1b\\https://good.example/\x1b]8;;\x1b\\", b"https://good.example/"),
    (b"\x1b]7;file://host/tmp\x07\x1b]4;1;rgb:ff/00/00\x07\x1b]10;?\x07ok", b"ok"),
    (b"\x1b]0;\xe2\x80\x9cquoted\xe2\x80\x9d\x07ok", b"ok"),  # 0x9C in a title's UTF-8 is not ST
    (b"\x1b]0;t\xc2\x9cok\x9d0;t\x07ok\xc2\x9d0;t\x1b\\ok", b"okokok"),  # C1 OSC and ST, 8-bit and UTF-8
    (b"\x1b]0;t\x1b[31mred", b"\x1b[31mred"),  # an ESC inside a string ends it; a new sequence starts
    (b"\x1b]0;t\x18ok\x1b]0;t\x1aok", b"okok"),
    # DCS (DECRQSS, sixel, tmux passthrough), APC (kitty graphics), PM, SOS; BEL does not end them
    # (DECRQSS, sixel, then tmux's passthrough: its inner OSC 52 is dropped too)
    (b"\x1bP$qm\x1b\\a\x1bPq#0;2;0;0;0~-\x1b\\b\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\c", b"abc"),
    (b"\x1b_Gf=24;AAAA\x07x\x1b\\a\x1b^pm\x1b\\b\x1bXsos\x1b\\c", b"abc"),
    (b"\x90dcs\x9c\x1b\\a\x9fapc\x1b\\b\x9epm\x1b\\c\x98sos\x1b\\d", b"abcd"),
    # two-byte ESC sequences: a few kept, the rest dropped
    (b"\x1b7\x1b8\x1b=\x1b>\x1bM", b"\x1b7\x1b8\x1b=\x1b>\x1bM"),
    (b"a\x1bcb\x1bDc\x1bEd\x1bHe\x1bNf\x1bOg\x1bZh\x1bni\x1b\\j", b"abcdefghij"),  # RIS IND NEL HTS ... ST
    (b"\x1b(0lqk\x1b(B\x1b)0\x1b)B", b"\x1b(0lqk\x1b(B\x1b)0\x1b)B"),  # line drawing, as ncurses' smacs/rmacs
    (b"a\x1b%Gb\x1b#8c\x1b F\x1b G\x1b(Kd\x1b$(Ce", b"abcde"),  # UTF-8 mode, DECALN, S7C1T/S8C1T, other sets
    (b"a\x1b\x1b[1mb\x1b\rc\x1b\xc3\xa9", b"a\x1b[1mb\r\xc3\xa9"),  # ESC CR c: CR executed, then RIS
    # ill-formed UTF-8: one U+FFFD per longest well-formed start
    (b"a\xffb\xe2\x82c\xc0\xafd\xed\xa0\xa0e", b"a" + REPLACEMENT + b"b" + REPLACEMENT + b"c" + REPLACEMENT * 2 + b"d"
     + REPLACEMENT * 3 + b"e"),
    (b"\xed\xa0\x80x", REPLACEMENT * 2 + b"x"),  # a lone 0x80..0x9F is a C1 control, dropped
    (b"\xe0\x80\x9dx\x07y", REPLACEMENT + b"y"),  # E0 80: ill-formed; then 0x9D, an 8-bit OSC, ended by BEL
    # unfinished at the end: dropped (a character: U+FFFD)
    (b"ok\x1b]52;c;c2gtYXR0YWNr", b"ok"), (b"ok\x1bPq#0", b"ok"), (b"ok\x1b[31", b"ok"), (b"ok\x1b", b"ok"),
    (b"ok\x1b(", b"ok"), (b"ok\xf0\x9f\x99", b"ok" + REPLACEMENT), (b"ok\xc2", b"ok" + REPLACEMENT),
]


@pytest.mark.parametrize(("written", "shown"), CASES, ids=[repr(case[0][:24]) for case in CASES])
def test_each_sequence_gives_the_same_screen_whole_and_split_at_every_byte(written: bytes, shown: bytes) -> None:
    assert_every_split(written, shown)


def test_the_attack_suites_title_and_clipboard_write_do_not_pass() -> None:
    written = b"\x1b]0;sh-attack-title\x07\x1b]52;c;c2gtYXR0YWNr\x07sh-attack-screen-end"
    assert_every_split(written, b"sh-attack-screen-end")


def test_a_csi_is_kept_up_to_its_cap_and_dropped_past_it() -> None:
    at_cap = b"\x1b[" + b"1;" * ((CSI_MAX - 3) // 2) + b"1" * ((CSI_MAX - 3) % 2) + b"m"
    assert len(at_cap) == CSI_MAX and screen_csi(at_cap) == at_cap
    over = at_cap[:-1] + b"1m"
    assert screen_csi(over) is None
    assert_every_split(at_cap + b"x", at_cap + b"x")
    assert whole(over + b"x") == b"x"
    assert in_pieces([over[:CSI_MAX - 1], over[CSI_MAX - 1:] + b"x"]) == b"x"


def test_an_endless_csi_or_string_holds_at_most_the_cap() -> None:
    term = TermFilter()
    assert term.feed(b"a\x1b[") == b"a"
    for _ in range(64):
        assert term.feed(b"1;" * 8192) == b""
        assert term.held <= CSI_MAX
    assert term.state is State.CSI_DROPPED
    assert term.feed(b"mb\x1b]52;c;") == b"b"
    for _ in range(64):
        assert term.feed(b"QUFB" * 4096) == b""
        assert term.held == 0
    assert term.feed(b"\x07c") == b"c"


def test_end_drops_what_is_unfinished_and_starts_afresh() -> None:
    term = TermFilter()
    assert term.feed(b"x\x1b]0;never ended") == b"x"
    assert term.end() == b"" and term.state is State.GROUND and term.held == 0
    assert term.feed(b"y\x1b[1m") == b"y\x1b[1m"


def test_the_filter_follows_the_alternate_screen() -> None:
    term = TermFilter()
    assert not term.on_alternate_screen
    term.feed(b"text\x1b[?1049h\x1b[2J")
    assert term.on_alternate_screen
    term.feed(b"\x1b[?1049l\x1b[?47h\x1b[?47l\x1b[?1047;1000h\r\n")
    assert term.on_alternate_screen
    term.feed(b"\x1b[?1047")
    term.feed(b"l")  # split anywhere
    assert not term.on_alternate_screen
    term.feed(b"\x1b[?3;1049h")  # DECCOLM is dropped, the switch kept
    assert term.on_alternate_screen


# -- properties -----------------------------------------------------------------------------------

INTERESTING = [b"\x1b", b"[", b"]", b"P", b"_", b"^", b"X", b"\\", b"\x07", b"\x18", b"\x9b", b"\x9c", b"\x9d",
               b"\x90", b"\xc2", b"\xe2\x80", b"\x9c", b"0", b";", b"1", b"?", b" ", b"$", b"(", b"m", b"t", b"a",
               b"h", b"l", b"J", b"3", b"1049", b">", b"u", b"\xc2\x85", b"\x85", b"\xff", b"c",
               b"\r\n", b"\x00", b"\xf0\x9f\x99\x82", b"\xe2\x80\x94", b"52;c;", b"\x1b[31m", b"\x1b]0;t\x07",
               b"\x1b\\"]
STREAMS = st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(INTERESTING), max_size=60).map(b"".join))


@st.composite
def split_anywhere(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(STREAMS)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return data, [data[start:stop] for start, stop in itertools.pairwise(bounds)]


@settings(max_examples=1500)
@given(split_anywhere())
def test_splitting_the_input_anywhere_gives_the_same_output(case: tuple[bytes, list[bytes]]) -> None:
    data, pieces = case
    assert in_pieces(pieces) == whole(data)


@settings(max_examples=1500)
@given(STREAMS)
def test_whatever_the_app_writes_only_kept_pieces_reach_the_terminal(data: bytes) -> None:
    shown = whole(data)
    assert KEPT_STREAM.fullmatch(shown), shown
    shown.decode("utf-8")  # never an ill-formed character, never a raw C1 byte
    for csi in re.findall(rb"\x1b\[[\x20-\x3f]*[\x40-\x7e]", shown):
        assert screen_csi(csi) == csi, csi  # each CSI shown is one the policy passes as it is


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs"))))
def test_well_formed_text_passes_as_it_is(text: str) -> None:
    assert whole(text.encode()) == text.encode()


@given(st.binary().map(lambda data: bytes(byte for byte in data if 0x20 <= byte <= 0x7E or byte >= 0xA0)))
def test_ill_formed_text_shows_as_a_utf8_decoder_shows_it(data: bytes) -> None:
    assert whole(data) == data.decode("utf-8", "replace").encode()


# -- in the relay --------------------------------------------------------------------------------

def test_the_relays_screen_channel_filters_and_drops_the_unfinished_at_its_end() -> None:
    channel = Channel(screen_filter=TermFilter())
    channel.received(b"\x1b]52;c;c2g")
    channel.received(b"tYXR0YWNr\x07\x1b[1mbold\xe2\x80")
    assert bytes(channel.pending) == b"\x1b[1mbold"
    channel.received(b"")
    assert bytes(channel.pending) == b"\x1b[1mbold" + REPLACEMENT and channel.wants_write()


def test_long_text_is_validated_in_windows_and_errors_far_apart_are_each_found() -> None:
    text = "日本語のテキスト, café 🙂 ".encode() * 400
    data = text + b"\xff" + text * 3 + b"\xe2\x28" + text + b"\xc2\x9d0;title\x07" + text + b"\xf0\x9f"
    expected = (text + REPLACEMENT + text * 3 + REPLACEMENT + b"(" + text + text + REPLACEMENT)
    assert whole(data) == expected
    for size in (1, 3, 4093, 65536):
        assert in_pieces([data[i:i + size] for i in range(0, len(data), size)]) == expected
