"""The run stream's framings read back: NDJSON and the binary framing, split anywhere. Pure, no root."""

from __future__ import annotations

import json

import pytest

from doors.shell._output import Framer, Outcome
from doors.shell._wire import FRAMES_TYPE, FrameReader, decode_chunk, wants_frames


@pytest.mark.parametrize(("accept", "wanted"), [
    (FRAMES_TYPE, True),
    (f"application/x-ndjson, {FRAMES_TYPE};q=0.9", True),
    (FRAMES_TYPE.upper(), True),
    ("*/*", False),
    ("application/x-ndjson", False),
    (None, False),
    ("", False),
    (f"{FRAMES_TYPE}x", False),
    (f"text/{FRAMES_TYPE}", False),
])
def test_only_a_client_naming_the_binary_framing_gets_it(accept: str | None, wanted: bool) -> None:
    assert wants_frames(accept) is wanted


def _stream(binary: bool) -> bytes:
    framer = Framer(64, binary=binary)
    return b"".join((framer.started("c1", 7), framer.output("stdout", b"line one\nline \"two\"\n"),
                     framer.output("stderr", b"\xff\x00\n raw"), framer.output("stdout", b""),
                     framer.output("stdout", b"x" * 100), framer.tails(), framer.final(Outcome(0))))


def _read(data: bytes, binary: bool, cut: list[int]) -> list[dict]:
    reader, frames, at = FrameReader(binary), [], 0
    for end in [*cut, len(data)]:
        frames += reader.feed(data[at:end])
        at = end
    return frames


def _bytes_of(frames: list[dict], stream: str) -> bytes:
    return b"".join(decode_chunk(frame) for frame in frames if frame.get("stream") == stream
                    and "omitted" not in frame)


@pytest.mark.parametrize("binary", [False, True])
def test_frames_read_back_the_same_wherever_the_pieces_are_cut(binary: bool) -> None:
    data = _stream(binary)
    whole = _read(data, binary, [])
    assert [frame["seq"] for frame in whole] == list(range(1, len(whole) + 1))
    assert _bytes_of(whole, "stdout") == b"line one\nline \"two\"\n" + b"x" * 12 + b"x" * 32  # head 32, tail 32
    assert _bytes_of(whole, "stderr") == b"\xff\x00\n raw"
    assert whole[-1]["final"]["bytes"] == {"stdout": 120, "stderr": 7}
    for cut in range(1, len(data)):
        assert _read(data, binary, [cut]) == whole, cut
    assert _read(data, binary, list(range(1, len(data)))) == whole  # one byte at a time


def test_binary_data_frames_carry_their_raw_bytes_after_a_header_line() -> None:
    framer = Framer(1 << 20, binary=True)
    frame = framer.output("stderr", b"\x00\xff\n\"\\")
    header, _, rest = frame.partition(b"\n")
    assert json.loads(header) == {"seq": 1, "stream": "stderr", "length": 5}
    assert rest == b"\x00\xff\n\"\\"
    assert FrameReader(True).feed(frame) == [{"seq": 1, "stream": "stderr", "data": b"\x00\xff\n\"\\"}]


def test_ndjson_reader_does_not_take_a_length_as_binary() -> None:
    # an NDJSON stream never holds raw bytes: a "length" there is a field like any other
    assert FrameReader(False).feed(b'{"seq":1,"length":3}\n') == [{"seq": 1, "length": 3}]


def test_an_empty_data_frame_in_the_binary_framing() -> None:
    assert FrameReader(True).feed(b'{"seq":1,"stream":"stdout","length":0}\n{"seq":2}\n') == [
        {"seq": 1, "stream": "stdout", "data": b""}, {"seq": 2}]
