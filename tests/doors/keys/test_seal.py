"""The HPKE binding: canonical info bytes, and a blob that opens only under the context it was sealed for."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag

from doors.keys import Binding, OneTimeKey, public_key_from, seal
from doors.keys._seal import INFO_LABEL, PUBLIC_KEY_BYTES

BINDING = Binding("spiffe://td/s1/model", "anthropic", "api.anthropic.com", "r" * 16, 1_800_000_030)
SECRET = b"sk-ant-api03-" + b"x" * 95


def test_info_is_length_prefixed_and_unambiguous() -> None:
    info = BINDING.info()
    assert info.startswith(INFO_LABEL)
    assert info[len(INFO_LABEL):len(INFO_LABEL) + 2] == len(BINDING.requester_id).to_bytes(2, "big")
    # Moving a separator between two fields changes the bytes (a plain join would not).
    a = Binding("x", "ab", "c", "r" * 16, 1).info()
    b = Binding("x", "a", "bc", "r" * 16, 1).info()
    assert a != b


def test_round_trip() -> None:
    key = OneTimeKey()
    wire = key.public_bytes()
    assert len(wire) == PUBLIC_KEY_BYTES
    assert key.open(seal(SECRET, wire, BINDING), BINDING) == SECRET


@pytest.mark.parametrize("field", ["requester_id", "name", "host", "request_id", "expires_at"])
def test_other_info_does_not_open(field: str) -> None:
    key = OneTimeKey()
    sealed = seal(SECRET, key.public_bytes(), BINDING)
    value: Any = 1_800_000_031 if field == "expires_at" else "other-value-0000"
    other = replace(BINDING, **{field: value})
    with pytest.raises(InvalidTag):
        key.open(sealed, other)


def test_other_key_does_not_open() -> None:
    sealed = seal(SECRET, OneTimeKey().public_bytes(), BINDING)
    with pytest.raises(InvalidTag):
        OneTimeKey().open(sealed, BINDING)


def test_sealed_blob_does_not_hold_the_secret() -> None:
    assert SECRET not in seal(SECRET, OneTimeKey().public_bytes(), BINDING)


@pytest.mark.parametrize("wire", [b"", b"\x00" * 32, b"\x00" * (PUBLIC_KEY_BYTES + 1)])
def test_bad_public_key(wire: bytes) -> None:
    with pytest.raises(ValueError):
        public_key_from(wire)
