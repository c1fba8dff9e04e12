"""A terminal emulator to judge what reached the person's terminal: pyte's VT screen, taught what it skips.

pyte follows the cursor, SGR colours and attributes, modes (private ones too), the scroll region and the
G0/G1 character sets; it has no alternate screen and ignores SGR 8/28 (conceal), which this subclass adds.
Its stream decodes UTF-8 while still honouring charset designations (pyte ignores them in UTF-8 mode; real
terminals do not).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyte
from pyte import charsets, modes
from pyte.screens import StaticDefaultDict

ALTERNATE_SCREEN = {47, 1047, 1049}  # 1049 also saves the cursor on entry and restores it on exit

# Private modes the app may leave on and the launcher must put back (what pyte can show of them).
LEFT_ON_BY_AN_APP = {"alternate screen": 1049, "mouse": 1000, "SGR mouse": 1006, "bracketed paste": 2004,
                     "cursor keys": 1, "focus reports": 1004, "synchronized output": 2026}


@dataclass(frozen=True)
class Drawn:
    """Text drawn at a place, with the attributes it was drawn in."""

    row: int
    column: int
    text: str
    attrs: Any
    concealed: bool
    line_drawing: bool


class JudgedScreen(pyte.Screen):
    """pyte's screen that also follows conceal and records each piece of text drawn."""

    def __init__(self, columns: int = 100, lines: int = 30) -> None:
        super().__init__(columns, lines)
        self.concealed = False
        self.drawn: list[Drawn] = []
        self.main_screen: Any = None  # the main screen's lines while the alternate one is shown

    def set_mode(self, *numbers: int, **kwargs: Any) -> None:
        super().set_mode(*numbers, **kwargs)
        if kwargs.get("private") and ALTERNATE_SCREEN & set(numbers) and self.main_screen is None:
            if 1049 in numbers:
                self.save_cursor()
            self.main_screen = self.buffer
            self.buffer = defaultdict(lambda: StaticDefaultDict(self.default_char))

    def reset_mode(self, *numbers: int, **kwargs: Any) -> None:
        super().reset_mode(*numbers, **kwargs)
        if kwargs.get("private") and ALTERNATE_SCREEN & set(numbers) and self.main_screen is not None:
            self.buffer, self.main_screen = self.main_screen, None
            self.dirty.update(range(self.lines))
            if 1049 in numbers:
                self.restore_cursor()

    def select_graphic_rendition(self, *attrs: int, **_: Any) -> None:
        for attr in attrs or (0,):
            if attr == 8:
                self.concealed = True
            elif attr in (0, 28):
                self.concealed = False
        super().select_graphic_rendition(*attrs)

    def draw(self, data: str) -> None:
        charset = self.g1_charset if self.charset else self.g0_charset
        self.drawn.append(Drawn(self.cursor.y, self.cursor.x, data, self.cursor.attrs, self.concealed,
                                charset is not charsets.LAT1_MAP))
        super().draw(data)

    def private_mode(self, number: int) -> bool:
        return (number << 5) in self.mode

    def clean(self) -> dict[str, bool]:
        """What of the terminal's state differs from a fresh terminal's: name → True where it does."""
        return {
            **{name: self.private_mode(number) for name, number in LEFT_ON_BY_AN_APP.items()},
            "on the alternate screen": self.main_screen is not None,
            "hidden cursor": self.cursor.hidden or modes.DECTCEM not in self.mode,
            "no autowrap": modes.DECAWM not in self.mode,
            "scroll region": self.margins is not None,
            "insert mode": modes.IRM in self.mode,
            "newline mode": modes.LNM in self.mode,
            "origin mode": modes.DECOM in self.mode,
            "reverse screen": modes.DECSCNM in self.mode,
            "G0 not ASCII": self.g0_charset is not charsets.LAT1_MAP,
            "G1 not ASCII": self.g1_charset is not charsets.LAT1_MAP,
            "G1 in use": self.charset != 0,
            "attributes": self.cursor.attrs != self.default_char,
            "concealed": self.concealed,
        }


class JudgedStream(pyte.ByteStream):
    """UTF-8 in, and the character set designations honoured as a terminal does."""

    def __init__(self, screen: JudgedScreen) -> None:
        super().__init__(screen)
        self.use_utf8 = False  # for the parser: ESC ( 0, SO, SI act

    def feed(self, data: bytes) -> None:  # type: ignore[override]
        pyte.Stream.feed(self, self.utf8_decoder.decode(data))


def judged(data: bytes, columns: int = 100, lines: int = 30) -> JudgedScreen:
    """A fresh terminal of that size after `data`."""
    screen = JudgedScreen(columns, lines)
    JudgedStream(screen).feed(data)
    return screen
