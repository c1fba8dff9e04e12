"""What crosses the wire between the shell door and its clients: the routes, the bytes of a data frame, and
the status `sh` exits with. Pure.

Apart from the door's request parsing and framer, so that the `sh` client imports base64 and nothing more to
use them (every import is paid on each `sharness-launch sh`).
"""

from __future__ import annotations

import base64
from typing import Any

RUN_PATH = "/v0/shell/run"
APPLY_PATH = "/v0/shell/apply"  # overlay mode: the overlay's changes through the fs door (doors/shell/_overlay.py)
START_PATH, POLL_PATH, WRITE_PATH, SIGNAL_PATH, LIST_PATH = (
    "/v0/shell/start", "/v0/shell/poll", "/v0/shell/write", "/v0/shell/signal", "/v0/shell/list")


def encode_chunk(data: bytes) -> dict[str, str]:
    """`{"text": ...}` when the bytes are UTF-8, else `{"base64": ...}`."""
    try:
        return {"text": data.decode()}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def decode_chunk(frame: dict[str, Any]) -> bytes:
    """The bytes of a data frame (the inverse of encode_chunk)."""
    if "text" in frame:
        return str(frame["text"]).encode()
    return base64.b64decode(str(frame.get("base64", "")))


def shell_status(final: dict[str, Any], timeout_code: int, signal_base: int) -> int:
    """The status `sh` exits with, timeout(1)'s way: `timeout_code` on a timeout, signal_base+N on signal N,
    else the exit code (1 when the door killed it some other way without a signal)."""
    if final.get("timed_out"):
        return timeout_code
    if final.get("signal") is not None:
        return signal_base + int(final["signal"])
    code = final.get("exit_code")
    return int(code) if isinstance(code, int) else 1
