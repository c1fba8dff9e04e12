"""What a door writes to its stderr, as the launcher shows it: line by line, inert, prefixed with the door's
role, bounded in length, rate and number. Pure: bytes and the time in, lines out.

A door's stderr is a pipe the launcher reads (docs/contracts.md, fd 2), never the person's terminal: what a
door logs may hold text the app chose (a path in an error), so nothing of it may act on the terminal or pass
for the launcher's own words. Every control character, and every character that reorders or hides text (bidi
controls, zero-width characters), is shown as an escape, so the line is only ever text.
"""

from __future__ import annotations

import codecs
import unicodedata
from dataclasses import dataclass

LINE_CHARS = 200  # characters of one line shown; the rest is cut
HELD_BYTES = 4096  # an unfinished line is held up to this; a longer line is shown cut, its rest skipped
BURST_LINES = 10  # lines shown at once ...
LINES_PER_S = 1.0  # ... then this many a second
SESSION_LINES = 200  # lines of one door shown in a session; the rest are counted only
CUT = "…"

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def inert(text: str) -> str:
    """`text` with every character that is not plain visible text shown as a Python-style escape."""
    return "".join(_escaped(char) if unicodedata.category(char) in _ESCAPED_CATEGORIES else char for char in text)


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@dataclass(frozen=True)
class DiagnosticsStatistics:
    """What one door wrote: its lines, how many were shown and held back, and its bytes."""

    lines: int
    shown: int
    held_back: int
    bytes: int


class DoorDiagnostics:
    """One door's stderr: feed() what was read with the time, end() at its end; each gives lines to show."""

    def __init__(self, role: str, now: float) -> None:
        self._prefix = f"sharness-launch: {role} door: "
        self._partial = bytearray()
        self._skipping = False  # inside a line past HELD_BYTES: its rest is not shown
        self._tokens, self._refilled_at = float(BURST_LINES), now
        self._lines = self._shown = self._held_back = self._bytes = 0
        self._held_back_run = 0  # lines held back since the last one shown

    def feed(self, data: bytes, now: float) -> list[str]:
        """Lines to show now for `data`, the next bytes of the door's stderr."""
        self._bytes += len(data)
        shown: list[str] = []
        for piece in data.splitlines(keepends=True):
            if not self._skipping:
                self._partial += piece[:HELD_BYTES + 1 - len(self._partial)]
            if piece.endswith((b"\n", b"\r")):
                shown += self._line(now)
            elif len(self._partial) > HELD_BYTES:
                shown += self._line(now)
                self._skipping = True
        return shown

    def end(self, now: float) -> list[str]:
        """The door's stderr closed: its unfinished line, if any."""
        return self._line(now)

    def statistics(self) -> DiagnosticsStatistics:
        return DiagnosticsStatistics(self._lines, self._shown, self._held_back, self._bytes)

    def _line(self, now: float) -> list[str]:
        text = "" if self._skipping else codecs.decode(bytes(self._partial).rstrip(b"\r\n"), "utf-8", "replace")
        self._partial.clear()
        self._skipping = False  # the rest of a line already shown cut ends here
        if not text.strip():
            return []
        self._lines += 1
        if self._shown >= SESSION_LINES:
            self._held_back += 1
            return []
        if not self._take_token(now):
            self._held_back += 1
            self._held_back_run += 1
            return [f"{self._prefix}(more lines held back: {BURST_LINES} are shown at once, then "
                    f"{LINES_PER_S:g} a second)"] if self._held_back_run == 1 else []
        shown = [self._prefix + self._render(text)]
        if self._held_back_run:
            shown.insert(0, f"{self._prefix}({self._held_back_run} line(s) not shown)")
            self._held_back_run = 0
        self._shown += 1
        if self._shown == SESSION_LINES:
            shown.append(f"{self._prefix}(no more of its lines are shown in this session; the audit log counts them)")
        return shown

    def _take_token(self, now: float) -> bool:
        self._tokens = min(float(BURST_LINES), self._tokens + max(0.0, now - self._refilled_at) * LINES_PER_S)
        self._refilled_at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def _render(self, text: str) -> str:
        rendered = inert(text)
        return rendered if len(rendered) <= LINE_CHARS else rendered[:LINE_CHARS - 1] + CUT
