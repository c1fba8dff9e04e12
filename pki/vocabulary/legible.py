"""What a person cannot read: characters that hide, reorder or fake text, and the one way to show a string.

A name or a manifest string is shown to a person who decides on what they see. Controls move the cursor or
overwrite a line, bidi controls reorder what follows (`invoice-\\u202egnp.sh` shows as `invoice-hs.png`),
zero-width and other default-ignorable characters make two different names look the same (`.git\\u200b` next
to `.git`), and line separators break a line where none is shown. `unreadable` finds the first such
character; `escaped` is the one function every printer uses. Pure: no I/O. Part of the vocabulary, so the
manifest (launcher) and the fs door (doors) refuse the same characters, declared once.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

# General categories that are never visible text: controls, format characters (bidi, zero-width, tags),
# surrogates, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Categories whose look depends on a font or a Unicode version: refused where a person writes the text
# (the manifest), allowed in names already on disk (Samba maps ':' to private use; new emoji are unassigned
# to an older Python).
_UNSETTLED_CATEGORIES = frozenset({"Co", "Cn"})
# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties.txt) beyond the categories above: renderers
# draw nothing for these (variation selectors, the combining grapheme joiner, Hangul fillers, Mongolian
# free variation selectors), so they hide exactly as a zero-width space does.
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
# One regex over the ranges, so a printable string is checked at C speed (a 1 MiB manifest in milliseconds).
_IGNORABLE = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _IGNORABLE_RANGES) + "]")
_BIDI = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})
_ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF})


class Unreadable(NamedTuple):
    """One character a person cannot read for what it is, and why in words (a NamedTuple, not a dataclass:
    the vocabulary loads in every process, and dataclasses costs 6 ms of imports)."""

    char: str
    why: str  # "a bidi control", "a zero-width character", ...

    @property
    def code(self) -> str:
        """The code point as U+XXXX."""
        return f"U+{ord(self.char):04X}"

    def describe(self) -> str:
        """`U+202E (RIGHT-TO-LEFT OVERRIDE), a bidi control`: what a refusal names."""
        name = unicodedata.name(self.char, "")
        return f"{self.code} ({name}), {self.why}" if name else f"{self.code}, {self.why}"


def _why(char: str, category: str) -> str:
    code = ord(char)
    if code in _BIDI:
        return "a bidi control: it reorders the text shown after it"
    if code in _ZERO_WIDTH:
        return "a zero-width character: it makes two different names look the same"
    if category == "Cc":
        return "a C1 control character" if 0x80 <= code <= 0x9F else "a control character"
    if category in ("Zl", "Zp"):
        return "a line or paragraph separator: it breaks the line where none is shown"
    if category == "Cs":
        return "a lone surrogate"
    if category == "Co":
        return "a private-use character: how it looks depends on the font"
    if category == "Cn":
        return f"a code point unassigned in Unicode {unicodedata.unidata_version}: no one can tell how it looks"
    if category == "Cf":
        return "an invisible format character"
    return "a default-ignorable character: nothing is drawn for it"


def unreadable_char(char: str, *, unsettled: bool = False) -> Unreadable | None:
    """Why `char` cannot be read for what it is, or None; `unsettled` also refuses private use and unassigned."""
    category = unicodedata.category(char)
    refused = category in _HIDDEN_CATEGORIES or (unsettled and category in _UNSETTLED_CATEGORIES)
    if not refused and not _IGNORABLE.match(char):
        return None
    return Unreadable(char, _why(char, category))


def unreadable(text: str, *, unsettled: bool = False, allow: frozenset[str] = frozenset()) -> Unreadable | None:
    """The first character of `text` a person cannot read for what it is (see `unreadable_char`), or None.

    `allow` names characters the caller accepts anyway (they are still shown escaped)."""
    # Fast path: isprintable() is False for every refused category (and more), the regex finds the rest.
    if text.isprintable() and not _IGNORABLE.search(text):
        return None
    for char in text:
        if char in allow or (char.isprintable() and not _IGNORABLE.match(char)):
            continue
        found = unreadable_char(char, unsettled=unsettled)
        if found is not None:
            return found
    return None


def escaped(text: str) -> str:
    """`text` as it may be shown to a person: every character that is not plainly printable (and every one
    `unreadable_char` names) as `\\u{XXXX}`, a backslash as `\\\\`, so nothing shown is reordered, hidden or faked."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif not char.isprintable() or unreadable_char(char, unsettled=True) is not None:
            out.append(f"\\u{{{ord(char):04X}}}")
        else:
            out.append(char)
    return "".join(out)
