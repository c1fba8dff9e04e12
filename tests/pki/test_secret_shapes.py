"""The one definition of a secret's shape: the rule of the first match, or None. Pure."""

from __future__ import annotations

import pytest

from pki.secret_shapes import secret_shape


@pytest.mark.parametrize(("text", "rule"), [
    ("token=ghp_" + "Z" * 36, "github"),
    ("-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----", "pem"),
    ("Authorization: Bearer abcdefghijklmnop0123", "bearer"),
    ("AKIAABCDEFGHIJKLMNOP", "aws"),
    ("plain words and a path /usr/bin", None),
    ("ghp_tooshort", None),
])
def test_the_first_shape_found_is_named(text: str, rule: str | None) -> None:
    assert secret_shape(text) == rule
