"""The daemon's frames and requests, and which fds may be stdio: bytes or facts in, a verdict out. Pure."""

from __future__ import annotations

import base64
import os
import socket
import stat
import struct

import pytest

from launcher.daemon.protocol import (
    MAX_FRAME_BYTES,
    FrameReader,
    LogsRequest,
    ProtocolError,
    PsRequest,
    RunRequest,
    StopRequest,
    WinchRequest,
    encode_frame,
    parse_request,
    run_message,
)
from launcher.daemon.stdio_fds import FdFacts, kind_refusal

HASH = "sha256:" + "ab" * 32


def test_frames_arrive_whole_however_the_bytes_are_cut() -> None:
    data = encode_frame({"op": "ps"}) + encode_frame({"op": "stop", "sid": "0123abcd"})
    reader, frames = FrameReader(), []
    for byte in data:
        reader.feed(bytes([byte]))
        while (frame := reader.next_frame()) is not None:
            frames.append(frame)
    assert frames == [{"op": "ps"}, {"op": "stop", "sid": "0123abcd"}] and reader.pending == 0


def test_an_oversized_frame_is_refused_on_its_header() -> None:
    reader = FrameReader()
    with pytest.raises(ProtocolError, match="larger than"):
        reader.feed(struct.pack(">I", MAX_FRAME_BYTES + 1))


@pytest.mark.parametrize(("body", "words"), [(b"\xff", "UTF-8 JSON"), (b"[1]", "not a JSON object"),
                                             (b"{", "UTF-8 JSON"), (b"[" * 5000, "nested too deeply"),
                                             (b'{"op": "stop", "sid": "\\ud800"}', "lone surrogate"),
                                             (b'{"op": "stop", "sid": "\xed\xa0\x80"}', "not UTF-8")])
def test_a_frame_that_is_not_an_object_is_refused(body: bytes, words: str) -> None:
    reader = FrameReader()
    reader.feed(struct.pack(">I", len(body)) + body)
    with pytest.raises(ProtocolError, match=words):
        reader.next_frame()


def test_each_request_parses_into_its_record() -> None:
    run = parse_request(run_message(b"{}", HASH.upper().replace("SHA256", "sha256"), best_effort=True))
    assert run == RunRequest(b"{}", HASH, best_effort=True, json=False)
    assert parse_request({"op": "ps"}) == PsRequest()
    assert parse_request({"op": "stop", "sid": "0123abcd"}) == StopRequest("0123abcd")
    assert parse_request({"op": "logs", "sid": "0123abcd"}) == LogsRequest("0123abcd")
    assert parse_request({"op": "winch"}) == WinchRequest()


@pytest.mark.parametrize(("message", "words"), [
    ({"op": "rm"}, "unknown op"),
    ({"op": 1}, "unknown op"),
    ({"op": "ps", "all": True}, "unknown field"),
    ({"op": "stop", "sid": "../../etc"}, "not a session id"),
    ({"op": "stop"}, "'sid' must be a str"),
    ({"op": "run", "manifest": "{}", "expect_hash": HASH}, "not base64"),
    ({"op": "run", "manifest": "", "expect_hash": "sha256:12"}, "expect_hash"),
    ({"op": "run", "manifest": "", "expect_hash": HASH, "best_effort": 1}, "'best_effort' must be a bool"),
    ({"op": "run", "manifest": base64.b64encode(b" " * (1024 * 1024 + 1)).decode(), "expect_hash": HASH},
     "larger than"),
])
def test_a_bad_request_is_refused_saying_what(message: dict[str, object], words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        parse_request(message)


TTY, FIFO, REG, DIR, SOCK = stat.S_IFCHR | 0o620, stat.S_IFIFO | 0o600, stat.S_IFREG | 0o644, stat.S_IFDIR | 0o755, \
    stat.S_IFSOCK | 0o777


@pytest.mark.parametrize(("target", "facts", "words"), [
    (0, FdFacts(TTY, os.O_RDWR), None),
    (1, FdFacts(FIFO, os.O_WRONLY), None),
    (2, FdFacts(REG, os.O_WRONLY | os.O_APPEND), None),
    (0, FdFacts(SOCK, os.O_RDWR, socket.SOCK_STREAM, False), None),
    (0, FdFacts(DIR, os.O_RDONLY), "a directory"),
    (0, FdFacts(REG, os.O_PATH), "O_PATH"),
    (1, FdFacts(0o600, os.O_RDWR), "anonymous inode"),
    (1, FdFacts(stat.S_IFBLK | 0o660, os.O_RDWR), "block device"),
    (2, FdFacts(SOCK, os.O_RDWR, socket.SOCK_STREAM, True), "listening"),
    (2, FdFacts(SOCK, os.O_RDWR, socket.SOCK_DGRAM, False), "datagram"),
    (0, FdFacts(FIFO, os.O_WRONLY), "writing only"),
    (1, FdFacts(FIFO, os.O_RDONLY), "reading only"),
])
def test_only_what_stdio_can_be_is_accepted(target: int, facts: FdFacts, words: str | None) -> None:
    refusal = kind_refusal(target, facts)
    assert (refusal is None) if words is None else (refusal is not None and words in refusal), refusal
