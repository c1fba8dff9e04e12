"""pki/vocabulary/legible.py: which characters a person cannot read for what they are, and how every string is shown."""

from __future__ import annotations

import pytest

from pki.vocabulary import escaped, unreadable, unreadable_char

REFUSED_EVERYWHERE = [
    ("\x00", "control"), ("\x1b", "control"), ("\x7f", "control"), ("\x85", "C1 control"), ("\x9b", "C1 control"),
    ("\u202a", "bidi"), ("\u202e", "bidi"), ("\u2066", "bidi"), ("\u2069", "bidi"), ("\u200e", "bidi"),
    ("\u200f", "bidi"), ("\u061c", "bidi"),
    ("\u200b", "zero-width"), ("\u200c", "zero-width"), ("\u200d", "zero-width"), ("\u2060", "zero-width"),
    ("\ufeff", "zero-width"),
    ("\u00ad", "format"), ("\U000e0041", "format"), ("\u2064", "format"),
    ("\u2028", "separator"), ("\u2029", "separator"),
    ("\ufe0f", "default-ignorable"), ("\u034f", "default-ignorable"), ("\u3164", "default-ignorable"),
    ("\u180b", "default-ignorable"), ("\U000e0100", "default-ignorable"),
    ("\ud800", "surrogate"),
]
READABLE = ["a", " ", "/", "é", "e\u0301", "ß", "日", "\U0001f600", "Ω", "-", "_", "~", "\\"]


@pytest.mark.parametrize(("char", "words"), REFUSED_EVERYWHERE)
def test_hidden_characters_are_named_with_why(char: str, words: str) -> None:
    found = unreadable_char(char)
    assert found is not None and words in found.why
    assert found.code == f"U+{ord(char):04X}" and found.code in found.describe()


@pytest.mark.parametrize("text", READABLE)
def test_readable_text_passes(text: str) -> None:
    assert unreadable(text, unsettled=True) is None


@pytest.mark.parametrize("char", ["\ue000", "\U000f0000", "\u0378", "\U0003ffff"])
def test_private_use_and_unassigned_are_refused_only_when_unsettled_is_asked(char: str) -> None:
    assert unreadable_char(char) is None
    found = unreadable_char(char, unsettled=True)
    assert found is not None and ("private-use" in found.why or "unassigned" in found.why)


def test_unreadable_finds_the_first_and_honours_allow() -> None:
    found = unreadable("a\tb\u202ec")
    assert found is not None and found.code == "U+0009"
    found = unreadable("a\tb\u202ec", allow=frozenset("\t"))
    assert found is not None and found.code == "U+202E"
    assert unreadable("plain text/ok.txt") is None


@pytest.mark.parametrize(("raw", "shown"), [
    ("invoice-\u202egnp.sh", "invoice-\\u{202E}gnp.sh"),
    (".git\u200b/config", ".git\\u{200B}/config"),
    ("a\nb\tc", "a\\u{000A}b\\u{0009}c"),
    ("\x1b[2J", "\\u{001B}[2J"),
    ("nb\u00a0sp", "nb\\u{00A0}sp"),  # not refused, but not plainly printable: shown escaped
    ("\ue000", "\\u{E000}"),
    ("\U000e0041", "\\u{E0041}"),
    ("back\\slash", "back\\\\slash"),  # so a literal "\u{202E}" cannot pass for an escaped one
    ("literal \\u{202E}", "literal \\\\u{202E}"),
    ("Grüße 日本 \U0001f600", "Grüße 日本 \U0001f600"),
])
def test_escaped_shows_every_unreadable_character_as_its_code_point(raw: str, shown: str) -> None:
    assert escaped(raw) == shown
    assert all(char.isprintable() for char in escaped(raw))


def test_escaped_output_never_holds_what_unreadable_refuses() -> None:
    every = "".join(chr(code) for code in range(0x30000) if not 0xD800 <= code <= 0xDFFF)
    assert unreadable(escaped(every), unsettled=True) is None
