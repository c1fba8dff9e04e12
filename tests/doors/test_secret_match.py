"""The secret fingerprint: what it finds (runs, whole secrets, across chunks and writes), what it misses (said
in the module), what it holds (no run of a secret's bytes), and the packing it is fast by."""

from __future__ import annotations

import json
import os
import random

import pytest

from doors._secret_match import (
    CARRY,
    FIND_WINDOW,
    MIN_SECRET,
    WINDOW,
    SecretFingerprint,
    SecretMatcher,
    block_offsets,
    fingerprint_of,
    occurrences,
    packed_windows,
    projection_table,
)

KEY = bytes(range(32))
_RNG = random.Random(1)
_BASE64URL = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_-"
ANTHROPIC = b"sk-ant-api03-" + bytes(_RNG.choice(_BASE64URL) for _ in range(95))
HEX = bytes(_RNG.choice(b"0123456789abcdef") for _ in range(40))
SHORT = b"hunter2!x"  # 9 bytes: one block of its own length


def matcher(**values: bytes) -> SecretMatcher:
    return SecretMatcher(fingerprint_of(values, {name: ["api.example.test"] for name in values}, KEY))


@pytest.mark.parametrize(("length", "offsets"), [
    (7, ()), (8, (0,)), (15, (0,)), (16, (0,)), (17, (0, 1)), (31, (0, 15)), (32, (0, 16)), (33, (0, 16, 17)),
    (108, (0, 16, 32, 48, 64, 80, 92)),
])
def test_block_offsets(length: int, offsets: tuple[int, ...]) -> None:
    assert block_offsets(length) == offsets


def test_packing_puts_the_eight_bits_at_each_position_in_one_byte() -> None:
    rng = random.Random(3)
    for length in (0, 1, 7, 8, 9, 64, 1000):
        projected = bytes(rng.getrandbits(1) for _ in range(length))
        expected = bytes(int("".join(map(str, projected[r : r + 8])), 2) for r in range(length - 7))
        assert packed_windows(projected) == expected


def test_the_projection_splits_the_byte_values_in_half_by_key() -> None:
    table = projection_table(KEY)
    assert sorted(set(table)) == [0, 1] and sum(table) == 128
    assert projection_table(bytes(32)) != table


@pytest.mark.parametrize(("name", "text", "found"), [
    ("whole secret", b"key=" + ANTHROPIC + b"\n", "anthropic"),
    ("a run of 2*WINDOW-1 from anywhere", b"x" + ANTHROPIC[37 : 37 + 2 * WINDOW - 1] + b"y", "anthropic"),
    ("the tail of the secret", ANTHROPIC[-(2 * WINDOW - 1) :], "anthropic"),
    ("the first block alone", ANTHROPIC[:WINDOW], "anthropic"),
    ("a hex token", b"token: " + HEX, "hex"),
    ("a short secret, whole", b"pw " + SHORT + b" end", "short"),
    ("a run shorter than a block", ANTHROPIC[20 : 20 + WINDOW - 1], None),
    ("an unaligned run of 2*WINDOW-2", ANTHROPIC[17 : 17 + 2 * WINDOW - 2], None),
    ("a short secret cut by one byte", SHORT[:-1], None),
    ("one byte changed", ANTHROPIC[:40] + bytes([ANTHROPIC[40] ^ 1]) + ANTHROPIC[41:50], "anthropic"),
    ("nothing", os.urandom(4096), None),
])
def test_what_is_found(name: str, text: bytes, found: str | None) -> None:
    match = matcher(anthropic=ANTHROPIC, hex=HEX, short=SHORT).first(text)
    assert (match.secret.name if match else None) == found, name


def test_every_run_of_two_windows_is_found_and_no_run_under_one_window_is() -> None:
    seek = matcher(anthropic=ANTHROPIC)
    for start in range(len(ANTHROPIC)):
        for length in (WINDOW - 1, 2 * WINDOW - 1):
            run = ANTHROPIC[start : start + length]
            if len(run) < length:
                continue
            assert (seek.first(b"<" + run + b">") is not None) == (length == 2 * WINDOW - 1), (start, length)


def test_a_secret_shorter_than_min_secret_is_said_unmatched() -> None:
    fingerprint = fingerprint_of({"pin": b"1234567", "ok": SHORT}, {}, KEY)
    assert fingerprint.unmatched == ("pin",) and fingerprint.names == ("ok",)
    assert len(b"1234567") < MIN_SECRET


@pytest.mark.parametrize("cut", [1, 5, 15, 16, 17, 40, 100, 107])
def test_a_secret_cut_across_two_chunks_is_found_where_it_ends(cut: int) -> None:
    stream = matcher(anthropic=ANTHROPIC).stream()
    assert stream.feed(b"head " + ANTHROPIC[:cut]) is None or cut >= WINDOW
    finding = stream.feed(ANTHROPIC[cut:] + b" tail")
    assert finding is not None and finding.secret.name == "anthropic"
    assert finding.end == len(b"head ") + WINDOW  # the first block ends there, whatever the cut


def test_one_byte_chunks_and_a_seeded_history_find_it_too() -> None:
    stream = matcher(hex=HEX).stream(history=b"earlier write: " + HEX[:10])
    for byte in HEX[10:]:
        stream.feed(bytes([byte]))
    assert stream.finding is not None and stream.finding.secret.name == "hex"


def test_a_block_already_in_the_history_is_not_reported_again() -> None:
    stream = matcher(short=SHORT).stream(history=SHORT)  # the history holds it; nothing new does
    assert stream.feed(b"zzzz") is None
    assert CARRY == WINDOW - 1


def test_spans_cover_the_whole_secret_where_it_lies() -> None:
    seek = matcher(anthropic=ANTHROPIC, hex=HEX)
    text = b"a " + ANTHROPIC + b" b " + HEX[:31] + b" c"
    spans = [(start, end, secret.name) for start, end, secret in seek.spans(text)]
    start = 2 + len(ANTHROPIC) + 3
    assert spans == [(2, 2 + len(ANTHROPIC), "anthropic"), (start, min(len(text), start + len(HEX)), "hex")]


def test_the_wire_form_round_trips_and_holds_no_run_of_a_secret() -> None:
    fingerprint = fingerprint_of({"anthropic": ANTHROPIC, "hex": HEX}, {"anthropic": ["API.example.test"]}, KEY)
    wire = json.dumps(fingerprint.to_json())
    again = SecretFingerprint.from_json(json.loads(wire))
    assert again == fingerprint and again.secrets[0].hosts == frozenset({"api.example.test"})
    assert SecretMatcher(again).first(ANTHROPIC) is not None
    for value in (ANTHROPIC, HEX):
        for start in range(len(value) - 5):
            assert value[start : start + 6].decode() not in wire


def test_another_session_key_matches_nothing() -> None:
    theirs = SecretMatcher(fingerprint_of({"anthropic": ANTHROPIC}, {}, bytes(32)))
    ours = fingerprint_of({"anthropic": ANTHROPIC}, {}, KEY)
    assert theirs.fingerprint.to_json()["secrets"] != ours.to_json()["secrets"]
    assert theirs.first(ANTHROPIC) is not None  # each finds its own session's secret


@pytest.mark.parametrize("wrong", [{"format": "other"}, {"window": 8}])
def test_a_fingerprint_of_another_format_is_refused(wrong: dict[str, object]) -> None:
    raw = {**fingerprint_of({"hex": HEX}, {}, KEY).to_json(), **wrong}
    with pytest.raises(ValueError, match="fingerprint"):
        SecretFingerprint.from_json(raw)


def test_false_candidates_in_random_bytes_are_at_the_prefilter_rate_and_none_is_confirmed() -> None:
    seek = matcher(anthropic=ANTHROPIC, hex=HEX, short=SHORT)
    data = random.Random(4).randbytes(1 << 20)
    assert list(seek.find(data)) == []


def test_parts_fit_one_status_message_each_and_join_to_the_whole() -> None:
    big = random.Random(5).randbytes(64 * 1024)
    fingerprint = fingerprint_of({"big": big, "hex": HEX, "pin": b"1234"}, {}, KEY)
    parts = fingerprint.parts()
    assert [len(json.dumps(part)) < 64 * 1024 for part in parts] == [True, True, True]
    assert SecretFingerprint.from_parts(parts) == fingerprint
    assert SecretMatcher(SecretFingerprint.from_parts(parts)).first(b"." + big[1000:1031]) is not None


def test_parts_under_two_keys_are_refused() -> None:
    ours, theirs = fingerprint_of({"hex": HEX}, {}, KEY), fingerprint_of({"short": SHORT}, {}, bytes(32))
    with pytest.raises(ValueError, match="one key"):
        SecretFingerprint.from_parts([*ours.parts(), *theirs.parts()])


def test_blocks_that_do_not_fit_the_length_are_refused() -> None:
    raw = fingerprint_of({"hex": HEX}, {}, KEY).to_json()
    raw["secrets"][0]["length"] = 100
    with pytest.raises(ValueError, match="bytes of blocks"):
        SecretFingerprint.from_json(raw)


def _naive(haystack: bytes, needle: bytes, start: int) -> list[int]:
    return [at for at in range(start, len(haystack) - len(needle) + 1) if haystack[at:at + len(needle)] == needle]


@pytest.mark.parametrize("start", [0, 5, FIND_WINDOW - 3, FIND_WINDOW + 1])
def test_occurrences_finds_each_once_also_across_a_search_window_boundary(start: int) -> None:
    needle = b"\x01\x02\x01\x02\x01"
    haystack = bytearray(3 * FIND_WINDOW)
    for at in (0, 7, FIND_WINDOW - 4, FIND_WINDOW - 2, FIND_WINDOW, 2 * FIND_WINDOW - 1, 3 * FIND_WINDOW - 5):
        haystack[at:at + len(needle)] = needle  # overlapping ones too (FIND_WINDOW - 4 and - 2)
    assert list(occurrences(bytes(haystack), needle, start)) == _naive(bytes(haystack), needle, start)


def test_a_secret_straddling_a_search_window_of_a_large_chunk_is_found() -> None:
    matcher = SecretMatcher(fingerprint_of({"anthropic": ANTHROPIC}, {"anthropic": ["api.anthropic.com"]}, KEY))
    for at in range(FIND_WINDOW - len(ANTHROPIC), FIND_WINDOW + 3, 7):
        data = bytes(at) + ANTHROPIC + bytes(2 * FIND_WINDOW)
        found = matcher.first(data)
        assert found is not None and found.secret.name == "anthropic", at
