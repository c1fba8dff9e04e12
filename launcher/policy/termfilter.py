"""Filter the app's terminal output before it reaches the person's terminal (app → person, the screen).

Pure and streaming: bytes in, bytes out, the state carried from one chunk to the next, so a sequence may
be split anywhere. What comes out is safe by construction, each piece emitted whole: well-formed UTF-8
text; BEL, BS, HT, LF, CR; the CSI sequences launcher/policy/csi_policy.py allows (colours, cursor moves,
erasing the visible screen, an allow list of modes; never scrollback erasure, window operations, media copy
or the keyboard protocols); ESC 7 8 = > M and the G0/G1 designations of ASCII and line drawing. Strings
that reach past the screen (OSC: titles, clipboard, hyperlinks; DCS, APC, PM, SOS) are dropped whole, in
their 7-bit, 8-bit and UTF-8-encoded C1 forms. The policy and why: docs/decisions/ptyrelay.md.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from enum import Enum

from launcher.policy.csi_policy import CSI_MAX, SHORT_CSI_KEPT, csi_decision, screen_csi

__all__ = ["CSI_MAX", "REPLACEMENT", "State", "TermFilter", "screen_csi"]

TEXT_WINDOW_MIN, TEXT_WINDOW = 64, 4096  # UTF-8 text is validated this much at a time (the window grows
# while the text is well-formed and shrinks at an error, so ill-formed bytes cost no rescan of a long run)
REPLACEMENT = "\N{REPLACEMENT CHARACTER}".encode()  # what an ill-formed UTF-8 sequence becomes

ESC, CAN, SUB, DEL = 0x1B, 0x18, 0x1A, 0x7F
_CONTROLS_KEPT = b"\x07\x08\x09\x0a\x0d"  # BEL BS HT LF CR
_ESC_KEPT = b"78=>M"  # DECSC DECRC DECKPAM DECKPNM RI
_DESIGNATORS, _CHARSETS_KEPT = b"()", b"0B"  # ESC ( 0 and ESC ( B: what ncurses' smacs/rmacs/sgr0 send
_STRING_STARTS = {ord("]"): True, ord("P"): False, ord("_"): False, ord("^"): False, ord("X"): False}
_C1_STRINGS = {0x9D: True, 0x90: False, 0x9F: False, 0x9E: False, 0x98: False}  # True: an OSC (ends at BEL)
_C1_CSI = 0x9B

_UTF8_PREFIX = re.compile(  # the longest start of a well-formed character (Unicode table 3-7)
    rb"[\xc2-\xdf]|\xe0[\xa0-\xbf]?|[\xe1-\xec\xee\xef][\x80-\xbf]?|\xed[\x80-\x9f]?"
    rb"|\xf0(?:[\x90-\xbf][\x80-\xbf]?)?|[\xf1-\xf3](?:[\x80-\xbf][\x80-\xbf]?)?|\xf4(?:[\x80-\x8f][\x80-\xbf]?)?")
# Bytes GROUND drops: C0 controls but BEL BS HT LF CR ESC, DEL, C1 controls but the 8-bit CSI and string starts
_DROPPED_CLASS = rb"[\x00-\x06\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\x80-\x8f\x91-\x97\x99\x9a\x9c]"
_REPLACED_CLASS = rb"[\xa0-\xbf\xc0\xc1\xf5-\xff]"  # never the start of a well-formed character: U+FFFD each
_ENCODED_C1_DROPPED = rb"\xc2[\x80-\x8f\x91-\x97\x99\x9a\x9c]"  # the same C1 controls, UTF-8-encoded
# ESC and a final byte that is not kept (78=>M) nor starts a CSI or a string ([ ] P X ^ _): RIS, IND, NEL, ...
_ESC_DROPPED = rb"\x1b[\x30-\x36\x39-\x3c\x3f-\x4c\x4e\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e]"
_ASCII_RUN = re.compile(rb"(?:[\x07-\x0a\x0d\x20-\x7e]+|" + SHORT_CSI_KEPT + rb")+")  # passes as it is
_GROUND_RUN = re.compile(  # GROUND's fast path: whatever needs no state, many pieces in one scan
    rb"(?:[\x07-\x0a\x0d\x20-\x7e]+|" + SHORT_CSI_KEPT + rb"|" + _DROPPED_CLASS + rb"+|" + _REPLACED_CLASS
    + rb"+|" + _ENCODED_C1_DROPPED + rb"|" + _ESC_DROPPED + rb")+")
_TEXT_BYTES = bytes(byte for byte in range(0x100) if byte in _CONTROLS_KEPT or 0x20 <= byte <= 0x7E)
_ESC_DROPPED_RE = re.compile(_ESC_DROPPED)
_CLEANING = (  # applied in this order to a run: none of them can make a match for one before it
    (_ESC_DROPPED_RE, b""),
    (re.compile(_ENCODED_C1_DROPPED), b""),
    (re.compile(_DROPPED_CLASS + b"+"), b""),
    (re.compile(_REPLACED_CLASS), REPLACEMENT),  # last: U+FFFD's own bytes are in its class
)
_TEXT_RUN = re.compile(  # text if it decodes as UTF-8; never through a C1 control in UTF-8 (U+0080..U+009F)
    rb"(?:[\x07-\x0a\x0d\x20-\x7e\x80-\xc1\xc3-\xff]+|\xc2[\xa0-\xbf])+")
_CSI_WHOLE = re.compile(rb"\x1b\[[\x20-\x3f]*[\x40-\x7e]")
_CSI_BODY = re.compile(rb"[\x20-\x3f]*")
_OSC_END = re.compile(rb"[\x07\x18\x1a\x1b]|\xc2\x9c")  # BEL, CAN, SUB, ESC (ESC \ is ST), C1 ST in UTF-8
_STRING_END = re.compile(rb"[\x18\x1a\x1b]|\xc2\x9c")


def _cleaned(run: bytes) -> bytes:
    """A GROUND run with its dropped pieces left out and each never-starting byte replaced."""
    others = run.translate(None, _TEXT_BYTES)  # C speed, unlike a search for a negated class
    if not others or (others.count(b"\x1b") == len(others) and not _ESC_DROPPED_RE.search(run)):
        return run  # the usual case: text and kept CSIs only
    for pattern, replacement in _CLEANING:
        run = pattern.sub(replacement, run)
    return run


class State(Enum):
    """Where the filter is in the app's output, as in a VT500 parser."""

    GROUND = "ground"
    ESCAPE = "escape"  # after ESC
    ESCAPE_INTERMEDIATE = "escape intermediate"  # after ESC and a byte 0x20-0x2F (ESC ( B, ESC # 8, ESC % G)
    CSI = "csi"  # inside ESC [ (or 0x9B): held until its final byte says whether it passes
    CSI_DROPPED = "csi dropped"  # inside a CSI past CSI_MAX: skipped to its final byte
    OSC = "osc"  # inside ESC ] (or 0x9D): skipped to BEL or ST
    STRING = "string"  # inside DCS, APC, PM or SOS: skipped to ST


def _well_formed_length(text: bytes) -> tuple[int, bool]:
    """How long a start of `text` is well-formed UTF-8, and whether the rest is only an unfinished character
    (the decoder in C does the work)."""
    try:
        return codecs.utf_8_decode(text, "strict", False)[1], True
    except UnicodeDecodeError as exc:
        return exc.start, False


class TermFilter:
    """The screen direction's filter: feed() each chunk the app wrote, end() once the pty hung up."""

    def __init__(self) -> None:
        self._state = State.GROUND
        self._held = b""  # bytes of an unfinished UTF-8 character (GROUND) or a lone C2 (OSC, STRING)
        self._csi = bytearray()  # the CSI sequence so far, in its 7-bit form
        self._intermediate: int | None = None  # ESCAPE_INTERMEDIATE: its one byte, None after a second
        self._window = TEXT_WINDOW_MIN
        self._alternate_screen = False
        self._steps: dict[State, Callable[[bytes, int, list[bytes]], int]] = {
            State.GROUND: self._ground, State.ESCAPE: self._escape,
            State.ESCAPE_INTERMEDIATE: self._escape_intermediate, State.CSI: self._in_csi,
            State.CSI_DROPPED: self._in_csi, State.OSC: self._in_string, State.STRING: self._in_string}

    @property
    def state(self) -> State:
        return self._state

    @property
    def on_alternate_screen(self) -> bool:
        """Whether the last alternate-screen switch shown entered it (so the reset at close leaves it)."""
        return self._alternate_screen

    @property
    def held(self) -> int:
        """How many bytes wait for the rest of their sequence (at most CSI_MAX)."""
        return len(self._held) + len(self._csi)

    def feed(self, data: bytes) -> bytes:
        """What of `data` (and of what earlier chunks left unfinished) may reach the person's terminal now."""
        if self._held:
            data, self._held = self._held + data, b""
        out: list[bytes] = []
        position = 0
        while position < len(data):
            position = self._steps[self._state](data, position, out)
        return b"".join(out)

    def end(self) -> bytes:
        """The app's output ended: an unfinished sequence or string is dropped, an unfinished character is U+FFFD."""
        tail = REPLACEMENT if self._held and self._state is State.GROUND else b""
        self._state, self._held, self._csi, self._intermediate = State.GROUND, b"", bytearray(), None
        return tail

    # -- one step per state: consume from data[position:], return where the next step starts --

    def _runs(self, data: bytes, position: int, out: list[bytes]) -> int:
        """GROUND's fast path, what needs no state: text, short kept CSIs, dropped and replaced bytes in one scan
        (cleaned only when there is something to clean); UTF-8 text validated by the decoder."""
        if run := _ASCII_RUN.match(data, position):  # the usual case: text and kept CSIs, nothing to clean
            out.append(run.group())
            return run.end()
        if run := _GROUND_RUN.match(data, position):
            out.append(_cleaned(run.group()))
            return run.end()
        if 0xC2 <= data[position] <= 0xF4:  # a UTF-8 lead byte
            run = _TEXT_RUN.match(data, position, position + self._window)
            if run is None:  # C2 and a C1 control, or a C2 that ends the chunk: the state machine's
                return position
            length, clean = _well_formed_length(run.group())
            self._window = min(self._window * 4, TEXT_WINDOW) if clean else TEXT_WINDOW_MIN
            out.append(data[position:position + length])
            return position + length
        return position

    def _ground(self, data: bytes, position: int, out: list[bytes]) -> int:
        if (after_runs := self._runs(data, position, out)) > position:
            return after_runs
        byte = data[position]
        if byte == ESC:
            if whole := _CSI_WHOLE.match(data, position):  # the usual case: no need to hold it
                self._emit_csi(whole.group(), out)
                return whole.end()
            self._state = State.ESCAPE
            return position + 1
        if 0x80 <= byte <= 0x9F:  # an 8-bit C1 control (not part of a well-formed character)
            self._c1(byte)
            return position + 1
        if byte == 0xC2 and position + 1 < len(data) and 0x80 <= data[position + 1] <= 0x9F:
            self._c1(data[position + 1])  # a C1 control encoded as UTF-8 (U+0080..U+009F)
            return position + 2
        prefix = _UTF8_PREFIX.match(data, position)
        if prefix and prefix.end() == len(data):
            self._held = data[position:]  # the rest of this character is in the next chunk
            return len(data)
        out.append(REPLACEMENT)  # ill-formed: one U+FFFD for its longest well-formed start, as decoders do
        return prefix.end() if prefix else position + 1

    def _c1(self, control: int) -> None:
        if control == _C1_CSI:
            self._start_csi()
        elif control in _C1_STRINGS:
            self._state = State.OSC if _C1_STRINGS[control] else State.STRING
        # every other C1 control (IND, NEL, SS2, DECID, ST alone, ...) is dropped

    def _start_csi(self) -> None:
        self._state = State.CSI
        self._csi = bytearray(b"\x1b[")

    def _escape(self, data: bytes, position: int, out: list[bytes]) -> int:
        byte = data[position]
        if byte < 0x20 or byte == DEL:
            self._control_inside(byte, out)
        elif byte == ord("["):
            self._start_csi()
        elif byte in _STRING_STARTS:
            self._state = State.OSC if _STRING_STARTS[byte] else State.STRING
        elif byte in _ESC_KEPT:
            out.append(bytes((ESC, byte)))
            self._state = State.GROUND
        elif byte <= 0x2F:
            self._intermediate = byte
            self._state = State.ESCAPE_INTERMEDIATE
        else:
            self._state = State.GROUND
            if byte > 0x7E:
                return position  # not an escape sequence: the byte is read again as text
        return position + 1

    def _escape_intermediate(self, data: bytes, position: int, out: list[bytes]) -> int:
        byte = data[position]
        if byte < 0x20 or byte == DEL:
            self._control_inside(byte, out)
        elif byte <= 0x2F:
            self._intermediate = None  # two intermediates: nothing kept has that shape
        else:
            self._state = State.GROUND
            if byte > 0x7E:
                return position
            if self._intermediate is not None and self._intermediate in _DESIGNATORS and byte in _CHARSETS_KEPT:
                out.append(bytes((ESC, self._intermediate, byte)))
        return position + 1

    def _in_csi(self, data: bytes, position: int, out: list[bytes]) -> int:
        body = _CSI_BODY.match(data, position)
        assert body is not None  # `*` matches the empty string
        if body.end() > position:
            if self._state is State.CSI:
                self._csi += body.group()
                if len(self._csi) >= CSI_MAX:  # even with its final byte it would be too long
                    self._state, self._csi = State.CSI_DROPPED, bytearray()
            return body.end()
        byte = data[position]
        if byte < 0x20 or byte == DEL:
            self._control_inside(byte, out)
        elif byte <= 0x7E:
            if self._state is State.CSI:
                self._emit_csi(bytes(self._csi) + bytes((byte,)), out)
            self._state = State.GROUND
        else:
            self._state = State.GROUND
            return position  # a byte no CSI holds ends it unfinished; it is read again as text
        if self._state is not State.CSI:
            self._csi = bytearray()
        return position + 1

    def _emit_csi(self, sequence: bytes, out: list[bytes]) -> None:
        form, switched = csi_decision(sequence)
        if form is not None:
            out.append(form)
        if switched is not None:
            self._alternate_screen = switched

    def _control_inside(self, byte: int, out: list[bytes]) -> None:
        """A C0 control or DEL inside an escape or CSI sequence: as a VT500 parser does."""
        if byte == ESC:  # the sequence so far is abandoned; a new one starts
            self._state = State.ESCAPE
        elif byte in (CAN, SUB):  # cancel
            self._state = State.GROUND
        elif byte in _CONTROLS_KEPT:  # executed where it stands, so emitted before the sequence
            out.append(bytes((byte,)))

    def _in_string(self, data: bytes, position: int, out: list[bytes]) -> int:
        terminator = (_OSC_END if self._state is State.OSC else _STRING_END).search(data, position)
        if terminator is None:
            if data[-1] == 0xC2:  # maybe the start of a UTF-8-encoded ST
                self._held = b"\xc2"
            return len(data)
        byte = data[terminator.start()]
        self._state = State.ESCAPE if byte == ESC else State.GROUND  # ESC \ (ST) then ends in ESCAPE
        return terminator.end()
