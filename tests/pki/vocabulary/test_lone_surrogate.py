"""`lone_surrogate`: the one definition of a string no UTF-8 can hold, shared by the manifest's strict parse and
the doors' and daemon's `json_of`."""

from __future__ import annotations

import pytest

from pki.vocabulary import json_of, lone_surrogate


@pytest.mark.parametrize("text", ["", "plain", "é ß ✓", "\U0001f600", "\ufffd", "\uffff", "\ud7ff\ue000"])
def test_text_utf8_can_hold_has_none(text: str) -> None:
    assert lone_surrogate(text) is None
    text.encode()  # the same fact, as the codec sees it


@pytest.mark.parametrize(("text", "first"), [("\ud800", "\ud800"), ("a\udfffb", "\udfff"),
                                             ("\udc00\ud800", "\udc00"), ("ok \udbff", "\udbff")])
def test_the_first_surrogate_is_named(text: str, first: str) -> None:
    assert lone_surrogate(text) == first
    with pytest.raises(UnicodeEncodeError):
        text.encode()


def test_a_pair_of_escapes_is_one_code_point_and_passes_json_of() -> None:
    assert json_of(b'{"s": "\\ud83d\\ude00"}') == {"s": "\U0001f600"}
    with pytest.raises(ValueError, match="surrogate"):
        json_of(b'{"\\ud83d": 1}')  # a key too
