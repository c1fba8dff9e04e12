"""Frames and the final record: per-stream head+tail caps, sequence numbers, a kill never exit 0. Pure."""

from __future__ import annotations

import json
import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.shell._output import Framer, Outcome, StreamCap, json_string_bytes
from doors.shell._wire import decode_chunk, shell_status


def _frames(lines: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in lines.splitlines()]


def test_cap_keeps_head_and_tail_and_counts_what_it_dropped() -> None:
    cap = StreamCap(10)
    sent = b"".join(cap.feed(bytes([65 + i]) * 3) for i in range(10))  # AAABBBCCC... 30 bytes
    omitted, tail = cap.finish()
    assert sent == b"AAABB" and tail == b"IIJJJ" and omitted == 20 and cap.truncated
    assert len(sent) + omitted + len(tail) == cap.total == 30


def test_cap_under_the_limit_sends_everything_live() -> None:
    cap = StreamCap(100)
    assert cap.feed(b"x" * 40) == b"x" * 40 and cap.feed(b"y" * 10) == b"y" * 10
    assert cap.finish() == (0, b"") and not cap.truncated


def test_streams_are_capped_apart_and_numbered_in_one_sequence() -> None:
    framer = Framer(8)
    lines = framer.started("c1", 42) + framer.output("stdout", b"12345678") + framer.output("stderr", b"ab")
    lines += framer.output("stdout", b"9") + framer.tails()
    frames = _frames(lines)
    assert [frame["seq"] for frame in frames] == list(range(1, len(frames) + 1))
    stdout = b"".join(decode_chunk(f) for f in frames if f.get("stream") == "stdout" and "omitted" not in f)
    assert stdout == b"1234" + b"6789"
    assert [f["omitted"] for f in frames if "omitted" in f] == [1]
    assert [decode_chunk(f) for f in frames if f.get("stream") == "stderr"] == [b"ab"]


def test_binary_output_travels_as_base64() -> None:
    frame = _frames(Framer(64).output("stdout", b"\xff\xfe"))[0]
    assert "base64" in frame and decode_chunk(frame) == b"\xff\xfe"


EXITED_0, EXITED_3 = 0, 3 << 8


@pytest.mark.parametrize(("outcome", "exit_code", "sig", "status"), [
    (Outcome(EXITED_0), 0, None, 0),
    (Outcome(EXITED_3), 3, None, 3),
    (Outcome(signal.SIGKILL), None, 9, 137),
    (Outcome(signal.SIGKILL, timed_out=True, killed_by="timeout"), None, 9, 124),
    # A command that traps SIGTERM and exits 0 when its timeout comes is still not a success.
    (Outcome(EXITED_0, timed_out=True, killed_by="timeout"), None, None, 124),
    (Outcome(EXITED_0, killed_by="memory"), None, None, 1),
])
def test_a_kill_is_never_exit_0(outcome: Outcome, exit_code: int | None, sig: int | None, status: int) -> None:
    record = _frames(Framer(64).final(outcome))[0]["final"]
    assert record["exit_code"] == exit_code and record["signal"] == sig  # type: ignore[index]
    assert shell_status(record, 124, 128) == status  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [
    b"plain build output\n" * 50, "naïve ünïcode — ✓\n".encode(), b'quotes " and \\ backslashes\t\r\n',
    b"\x1b[31merror:\x1b[0m cannot find the symbol in the module you named \x07\n" * 3, b"",
    b"\\u0000 is not an escape here",
])
def test_a_hand_made_data_frame_is_the_json_of_its_bytes(data: bytes) -> None:
    line = Framer(1 << 20).output("stdout", data) if data else b'{"seq":1,"stream":"stdout","text":""}\n'
    frame = json.loads(line)
    assert frame["seq"] == 1 and frame["stream"] == "stdout" and decode_chunk(frame) == data
    assert "text" in frame and line.endswith(b"}\n") and line.count(b"\n") == 1


@pytest.mark.parametrize("data", [b"\x00" * 4096, b"\xff\xfe not utf-8", b"\n" * 100])
def test_binary_or_mostly_control_bytes_go_as_base64(data: bytes) -> None:
    frame = json.loads(Framer(1 << 20).output("stderr", data))
    assert "base64" in frame and decode_chunk(frame) == data and frame["stream"] == "stderr"


def test_every_byte_value_survives_the_hand_made_frame() -> None:
    data = bytes(range(256)) * 2 + b"a" * 4096  # few control bytes among many letters: the text path
    assert json_string_bytes(data) is None  # not UTF-8
    text = "".join(map(chr, range(0x80))) * 2 + "a" * 4096
    frame = json.loads(Framer(1 << 20).output("stdout", text.encode()))
    assert frame["text"] == text


@given(st.binary(min_size=1, max_size=512) | st.text(min_size=1, max_size=256).map(str.encode))
def test_any_output_reads_back_as_its_bytes(data: bytes) -> None:
    assert decode_chunk(json.loads(Framer(1 << 20).output("stdout", data))) == data
