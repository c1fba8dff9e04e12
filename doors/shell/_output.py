"""A command's output as frames, and its final record. Pure: bytes and wait statuses in, JSON records out.

Each stream (stdout, stderr) is capped on its own at `max_output_bytes`: the first half is sent as it
arrives, the last half is kept in a ring and sent at the end after one `omitted` frame saying how many
bytes in between were dropped. Every frame carries a sequence number (one count across both streams, in
the order the door read them). The final record never folds a kill into exit 0: a command the door killed
(its timeout, a limit, a signal asked for, the session ending) has `exit_code` null and `killed_by` set.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Any

STREAMS = ("stdout", "stderr")
# What the framer hands on: a frame's bytes, or a binary data frame's header line and its bytes apart (joining
# them copied each MiB of output once more: docs/decisions/bench.md, "shthrough").
Frame = bytes | tuple[bytes, bytes]


class StreamCap:
    """Head and tail of one stream within `limit` bytes: `feed` returns what to send now, `finish` the rest."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit - limit // 2
        self.tail_limit = limit // 2
        self.sent = 0
        self.total = 0
        self._tail = bytearray()

    def feed(self, data: bytes) -> bytes:
        """Count `data`; return the part that still fits the head (the rest goes to the tail ring)."""
        self.total += len(data)
        room = self.head_limit - self.sent
        now, later = data[:max(room, 0)], data[max(room, 0):]
        self.sent += len(now)
        if later:
            self._tail += later
            del self._tail[:max(len(self._tail) - self.tail_limit, 0)]
        return now

    def finish(self) -> tuple[int, bytes]:
        """(bytes omitted between head and tail, the tail)."""
        tail = bytes(self._tail)
        return self.total - self.sent - len(tail), tail

    @property
    def truncated(self) -> bool:
        return self.total > self.head_limit + self.tail_limit


# JSON escapes in a string the quote, the backslash and every byte under 0x20 (\\u00XX, or its short form).
_NOT_CONTROL = bytes(range(0x20, 0x100))
_SHORT = {0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0C: b"\\f", 0x0D: b"\\r"}
_ESCAPES = {byte: _SHORT.get(byte, b"\\u%04x" % byte) for byte in range(0x20)}


def json_string_bytes(data: bytes) -> bytes | None:
    """The inside of the JSON string holding `data` as text (what json.dumps(..., ensure_ascii=False) holds),
    or None when `data` is not UTF-8 or its escapes would make it longer than base64 (a binary dump, /dev/zero):
    it goes as base64 then.

    json.dumps escapes character by character, 6.5 ms per MiB of build output here, most of the door's cost per
    byte (docs/decisions/bench.md, "Throughput"); these are C passes over the bytes, about 1 ms per MiB."""
    try:
        data.decode()
    except UnicodeDecodeError:
        return None
    controls = data.translate(None, _NOT_CONTROL)
    long_escapes = len(controls) - sum(controls.count(short) for short in _SHORT)
    if 3 * (len(controls) + 4 * long_escapes) > len(data):  # the escapes would outgrow base64's third
        return None
    data = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    for byte in set(controls):
        data = data.replace(bytes((byte,)), _ESCAPES[byte])
    return data


class Framer:
    """Numbers the frames of one command and caps each stream: data in, NDJSON lines out."""

    def __init__(self, max_output_bytes: int, *, binary: bool = False) -> None:
        self.caps = {stream: StreamCap(max_output_bytes) for stream in STREAMS}
        self.seq = 0
        self.binary = binary  # data frames as a header line and their raw bytes (doors/shell/_wire.py, FRAMES_TYPE)

    def _line(self, record: dict[str, Any]) -> bytes:
        self.seq += 1
        return json.dumps({"seq": self.seq, **record}, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"

    def started(self, command_id: str, pid: int) -> bytes:
        """The first frame: the command runs, with its id and pid."""
        return self._line({"started": {"id": command_id, "pid": pid}})

    def alive(self, wall_ms: int) -> bytes:
        """A frame saying the command still runs (so a client that left is noticed when it cannot be sent)."""
        return self._line({"alive": {"wall_ms": wall_ms}})

    def output(self, stream: str, data: bytes) -> bytes:
        """The frame for `data` read from `stream`, or b"" when the stream's head is full."""
        frame = self.output_frame(stream, data)
        return frame if isinstance(frame, bytes) else b"".join(frame)

    def output_frame(self, stream: str, data: bytes) -> Frame:
        """As `output`, but in the binary framing the header line and the bytes apart (the bytes not copied)."""
        now = self.caps[stream].feed(data)
        if not now:
            return b""
        if self.binary:
            self.seq += 1
            return b'{"seq":%d,"stream":"%s","length":%d}\n' % (self.seq, stream.encode(), len(now)), now
        return self._data(stream, now)

    def _data(self, stream: str, data: bytes) -> bytes:
        """`{"seq","stream","text"|"base64"}` made by hand: the same JSON as _line, without json.dumps's cost;
        in the binary framing `{"seq","stream","length"}` and the bytes as they are."""
        if self.binary:
            self.seq += 1
            return b'{"seq":%d,"stream":"%s","length":%d}\n%s' % (self.seq, stream.encode(), len(data), data)
        text = json_string_bytes(data)
        field, value = (b"text", text) if text is not None else (b"base64", base64.b64encode(data))
        self.seq += 1
        return b"".join((b'{"seq":', str(self.seq).encode(), b',"stream":"', stream.encode(), b'","', field, b'":"',
                         value, b'"}\n'))

    def tails(self) -> bytes:
        """At the end, per stream: the omitted marker and the kept tail."""
        lines = b""
        for stream in STREAMS:
            omitted, tail = self.caps[stream].finish()
            if omitted:
                lines += self._line({"stream": stream, "omitted": omitted,
                                     "text": f"\n[... {omitted} bytes omitted ...]\n"})
            if tail:
                lines += self._data(stream, tail)
        return lines

    def applied(self, answer: dict[str, Any]) -> bytes:
        """The frame of the overlay's apply after the command (`apply: true`), before the final record."""
        return self._line({"apply": answer})

    def final(self, outcome: Outcome) -> bytes:
        """The last frame: the final record."""
        record = outcome.record()
        record["truncated"] = {stream: self.caps[stream].truncated for stream in STREAMS}
        record["bytes"] = {stream: self.caps[stream].total for stream in STREAMS}
        return self._line({"final": record})


@dataclass(frozen=True)
class Outcome:
    """How a command ended: its wait status and what the door did to it."""

    wait_status: int
    timed_out: bool = False
    killed_by: str | None = None  # "timeout", "memory", "signal", "session_end", "client_gone"
    wall_ms: int = 0
    cpu_ms: int = 0
    max_rss_kb: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """`{exit_code|null, signal, timed_out, killed_by, wall_ms, cpu_ms, max_rss_kb}`: exit_code is null
        when a signal ended the command or the door killed it, so a kill never reads as success."""
        signalled = os.WIFSIGNALED(self.wait_status)
        exited = os.WIFEXITED(self.wait_status) and self.killed_by is None
        return {"exit_code": os.WEXITSTATUS(self.wait_status) if exited else None,
                "signal": os.WTERMSIG(self.wait_status) if signalled else None,
                "timed_out": self.timed_out, "killed_by": self.killed_by, "wall_ms": self.wall_ms,
                "cpu_ms": self.cpu_ms, "max_rss_kb": self.max_rss_kb, **self.extra}
