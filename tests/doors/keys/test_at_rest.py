"""Secrets sealed at rest: the sealed file round-trips; every change to it (a flipped byte anywhere, a header
field rewritten, truncation, another key) is refused with the reason; the machine key file and the keyed
fingerprint. Pure: no I/O."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from doors.keys import (
    KEY_HEADER_BYTES,
    MAX_VALUE_BYTES,
    MachineKey,
    SealedFileError,
    check_sealed,
    key_id_of_header,
    machine_key_of,
    open_value,
    read_header,
    seal_value,
    secret_value,
    valid_name,
)

KEY = MachineKey.generate()
VALUE = b"sk-ant-api03-" + b"q" * 95
SEALED = seal_value(KEY, "anthropic", VALUE, 1_800_000_000)
HEADER_END = SEALED.index(b"\n") + 1


def test_round_trip_and_what_the_header_says() -> None:
    header, ciphertext = read_header(SEALED)
    assert (header.name, header.created, header.key_id) == ("anthropic", 1_800_000_000, KEY.key_id)
    assert header.length == len(ciphertext) == len(VALUE) + 1120 + 16  # the hybrid's encapsulation, the GCM tag
    assert VALUE not in SEALED
    assert open_value(KEY, SEALED, "anthropic") == VALUE
    assert check_sealed(SEALED, "anthropic", KEY.key_id) == header


def test_the_machine_key_file_round_trips_and_its_header_names_it_alone() -> None:
    data = KEY.file_bytes()
    assert machine_key_of(data) == KEY
    assert key_id_of_header(data[:KEY_HEADER_BYTES]) == KEY.key_id
    assert KEY.mlkem_seed not in data[:KEY_HEADER_BYTES] and KEY.x25519_private not in data[:KEY_HEADER_BYTES]


def _flip(at: int) -> Callable[[bytes], bytes]:
    def flipped(data: bytes) -> bytes:
        spoiled = bytearray(data)
        spoiled[at] ^= 0x01
        return bytes(spoiled)
    return flipped


def _rewrite(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data[:HEADER_END].replace(old, new) + data[HEADER_END:]


OTHER_KEY = MachineKey.generate()
TAMPERED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("a flipped byte in the encapsulated key", _flip(HEADER_END + 5), "changed since it was sealed"),
    ("a flipped byte in the ciphertext body", _flip(HEADER_END + 1120 + 3), "changed since it was sealed"),
    ("a flipped byte in the tag", _flip(len(SEALED) - 1), "changed since it was sealed"),
    ("the created time rewritten", _rewrite(b"created=1800000000", b"created=1800000001"),
     "changed since it was sealed"),
    ("the fingerprint rewritten", lambda d: _rewrite(f"fingerprint={KEY.fingerprint(VALUE)}".encode(),
                                                     b"fingerprint=" + b"0" * 16)(d), "changed since it was sealed"),
    ("another secret's name", _rewrite(b"name=anthropic", b"name=openai"), "holds secret 'openai'"),
    ("another key id", _rewrite(KEY.key_id.encode(), OTHER_KEY.key_id.encode()), "sealed to machine key"),
    ("another suite", _rewrite(b"suite=MLKEM768-X25519", b"suite=X25519"), "suite"),
    ("the length rewritten", _rewrite(b"length=", b"length=1"), "truncated or extended"),
    ("truncated by one byte", lambda d: d[:-1], "truncated or extended"),
    ("truncated to the header", lambda d: d[:HEADER_END], "truncated or extended"),
    ("truncated inside the header", lambda d: d[:HEADER_END - 10], "header line has no end"),
    ("a byte appended", lambda d: d + b"\0", "truncated or extended"),
    ("another version", lambda d: d.replace(b"sharness-sealed/v1", b"sharness-sealed/v2", 1), "another version"),
    ("not a sealed file", lambda d: VALUE + b"\n", "not a sealed file"),
    ("empty", lambda d: b"", "not a sealed file"),
    ("a malformed header", _rewrite(b" created=", b" made="), "malformed"),
]


@pytest.mark.parametrize(("what", "spoil", "said"), TAMPERED, ids=[t[0] for t in TAMPERED])
def test_a_changed_sealed_file_is_refused_saying_why(what: str, spoil: Callable[[bytes], bytes], said: str) -> None:
    spoiled = spoil(SEALED)
    assert spoiled != SEALED
    with pytest.raises(SealedFileError) as caught:
        open_value(KEY, spoiled, "anthropic")
    assert said in str(caught.value)
    assert VALUE.decode() not in str(caught.value)


def test_another_machines_key_does_not_open_it() -> None:
    with pytest.raises(SealedFileError, match="sealed to machine key"):
        open_value(OTHER_KEY, SEALED, "anthropic")
    # The key id names the key; a file whose header claims this key but was sealed to another does not open.
    forged = seal_value(OTHER_KEY, "anthropic", VALUE, 1_800_000_000).replace(OTHER_KEY.key_id.encode(),
                                                                              KEY.key_id.encode(), 1)
    with pytest.raises(SealedFileError, match="changed since it was sealed"):
        open_value(KEY, forged, "anthropic")


def test_what_can_be_checked_without_the_key_is() -> None:
    """The launcher checks these before anything is created (it has the key's id, never the key)."""
    with pytest.raises(SealedFileError, match="sealed to machine key"):
        check_sealed(SEALED, "anthropic", OTHER_KEY.key_id)
    with pytest.raises(SealedFileError, match="truncated"):
        check_sealed(SEALED[:-7], "anthropic", KEY.key_id)
    with pytest.raises(SealedFileError, match="holds secret 'anthropic'"):
        check_sealed(SEALED, "openai", KEY.key_id)
    check_sealed(_flip(HEADER_END + 9)(SEALED), "anthropic", KEY.key_id)  # a changed ciphertext: the door's to find


KEY_FILE_SPOILED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("truncated", lambda d: d[:-1], "key bytes"),
    ("a flipped key byte", _flip(KEY_HEADER_BYTES + 3), "names another key"),
    ("a flipped header byte", _flip(3), "machine key header"),
    ("another suite", lambda d: d.replace(b"MLKEM768-X25519", b"MLKEM768-X25518", 1), "suite"),
]


@pytest.mark.parametrize(("what", "spoil", "said"), KEY_FILE_SPOILED, ids=[t[0] for t in KEY_FILE_SPOILED])
def test_a_changed_machine_key_file_is_refused(what: str, spoil: Callable[[bytes], bytes], said: str) -> None:
    with pytest.raises(SealedFileError, match=said):
        machine_key_of(spoil(KEY.file_bytes()))


def test_the_fingerprint_is_keyed_short_and_not_a_plain_hash() -> None:
    assert KEY.fingerprint(VALUE) == KEY.fingerprint(VALUE) and len(KEY.fingerprint(VALUE)) == 16
    assert KEY.fingerprint(VALUE) != OTHER_KEY.fingerprint(VALUE)  # without the key a guess cannot be tested
    assert KEY.fingerprint(b"1234") not in hashlib.sha256(b"1234").hexdigest()
    assert KEY.fingerprint(VALUE) != KEY.fingerprint(VALUE + b"x")


VALUES: list[tuple[bytes, bytes | None]] = [
    (b"sk-1\n", b"sk-1"),  # one trailing newline dropped
    (b"sk-1\r\n", b"sk-1"),
    (b"sk-1\n\n", b"sk-1\n"),  # only one
    (b"sk 1 \t", b"sk 1 \t"),  # nothing else is stripped
    (b"", None),
    (b"\n", None),
    (b"x" * MAX_VALUE_BYTES + b"\n", b"x" * MAX_VALUE_BYTES),
    (b"x" * (MAX_VALUE_BYTES + 1), None),
]


@pytest.mark.parametrize(("raw", "value"), VALUES, ids=[f"{len(v[0])}B" for v in VALUES])
def test_what_a_person_gives_becomes_the_value(raw: bytes, value: bytes | None) -> None:
    if value is None:
        with pytest.raises(ValueError, match=r"empty|larger"):
            secret_value(raw)
    else:
        assert secret_value(raw) == value


@pytest.mark.parametrize(("name", "ok"), [("anthropic", True), ("a.b-c_1", True), ("9lives", True),
                                          ("", False), (".hidden", False), ("../x", False), ("A", False),
                                          ("a/b", False), ("x" * 65, False)])
def test_secret_names(name: str, ok: bool) -> None:
    assert valid_name(name) is ok
