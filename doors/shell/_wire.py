"""What crosses the wire between the shell door and its clients: the routes, the bytes of a data frame, and
the status `sh` exits with. Pure.

Apart from the door's request parsing and framer, so that the `sh` client imports nothing more to use them
than two C modules (every import is paid on each `sharness-launch sh`: `base64` and `json` load `re`).
"""

from __future__ import annotations

import binascii

from doors.shell._cjson import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUN_PATH = "/v0/shell/run"
APPLY_PATH = "/v0/shell/apply"  # overlay mode: the overlay's changes through the fs door (doors/shell/_overlay.py)
START_PATH, POLL_PATH, WRITE_PATH, SIGNAL_PATH, LIST_PATH = (
    "/v0/shell/start", "/v0/shell/poll", "/v0/shell/write", "/v0/shell/signal", "/v0/shell/list")
# The run stream's framing a client asks for with `accept`: every frame a JSON line as in NDJSON, but a data
# frame's line is `{"seq","stream","length":K}` followed by its K raw bytes (doors/shell/README.md). No escaping
# in the door, no JSON string of the output in the client. Without it (curl's */*) the stream is NDJSON.
FRAMES_TYPE = "application/vnd.sharness.shell-frames"


def encode_chunk(data: bytes) -> dict[str, str]:
    """`{"text": ...}` when the bytes are UTF-8, else `{"base64": ...}`."""
    try:
        return {"text": data.decode()}
    except UnicodeDecodeError:
        return {"base64": binascii.b2a_base64(data, newline=False).decode()}  # base64.b64encode


def decode_chunk(frame: dict[str, Any]) -> bytes:
    """The bytes of a data frame: its raw `data` (the binary framing), its text or its base64."""
    if "data" in frame:
        return bytes(frame["data"])
    if "text" in frame:
        return str(frame["text"]).encode()
    return binascii.a2b_base64(str(frame.get("base64", "")))  # base64.b64decode, not validating


def wants_frames(accept: str | None) -> bool:
    """Whether an `accept` header names FRAMES_TYPE (a media range of its own, parameters aside)."""
    return any(part.split(";", 1)[0].strip().lower() == FRAMES_TYPE for part in (accept or "").split(","))


class FrameReader:
    """The run stream's frames from body pieces: JSON lines, and in the binary framing a data frame's raw bytes
    after its line (the frame then holds them as `data`). Pieces are joined once per frame, not per piece."""

    def __init__(self, binary: bool) -> None:
        self.binary = binary
        self._parts: list[bytes | memoryview] = []
        self._have = 0
        self._frame: dict[str, Any] | None = None  # a data frame waiting for its bytes
        self._need = 0

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The frames `data` completes, in order."""
        frames: list[dict[str, Any]] = []
        at = 0
        while at < len(data):
            at = self._bytes(data, at, frames) if self._frame is not None else self._line(data, at, frames)
        return frames

    def _line(self, data: bytes, at: int, frames: list[dict[str, Any]]) -> int:
        end = data.find(b"\n", at)
        if end < 0:
            self._parts.append(data[at:])
            return len(data)
        line = b"".join((*self._parts, data[at:end])) if self._parts else data[at:end]
        self._parts = []
        if line:
            frame = loads(line)
            if self.binary and "length" in frame:
                self._frame, self._need, self._have = frame, int(frame.pop("length")), 0
                if not self._need:
                    frames.append(self._complete(b""))
            else:
                frames.append(frame)
        return end + 1

    def _bytes(self, data: bytes, at: int, frames: list[dict[str, Any]]) -> int:
        take = min(self._need - self._have, len(data) - at)
        self._parts.append(memoryview(data)[at:at + take])  # copied once, by the join at the frame's end
        self._have += take
        if self._have == self._need:
            frames.append(self._complete(b"".join(self._parts)))
            self._parts = []
        return at + take

    def _complete(self, data: bytes) -> dict[str, Any]:
        frame, self._frame = self._frame, None
        assert frame is not None
        frame["data"] = data
        return frame


def shell_status(final: dict[str, Any], timeout_code: int, signal_base: int) -> int:
    """The status `sh` exits with, timeout(1)'s way: `timeout_code` on a timeout, signal_base+N on signal N,
    else the exit code (1 when the door killed it some other way without a signal)."""
    if final.get("timed_out"):
        return timeout_code
    if final.get("signal") is not None:
        return signal_base + int(final["signal"])
    code = final.get("exit_code")
    return int(code) if isinstance(code, int) else 1
