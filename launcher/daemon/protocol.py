"""The daemon's wire protocol, sans-IO: frames of a 4-byte big-endian length and a JSON object, each at most
MAX_FRAME_BYTES; requests checked field by field into frozen records. Bytes in, frames or a ProtocolError out.

Requests (client → daemon), one per connection, then only `winch` frames while a session runs:
  {"op": "run", "manifest": "<base64 of the manifest's bytes>", "expect_hash": "sha256:…",
   "best_effort": false, "json": false}                            + SCM_RIGHTS: the caller's fds 0, 1, 2
  {"op": "ps"} · {"op": "stop", "sid": "…"} · {"op": "logs", "sid": "…"} · {"op": "winch"}
Replies (daemon → client): {"type": "refused", "reason", "hint", "row", "policy_row", "exit_code"},
  {"type": "accepted", "policy": "sha256:…"}, {"type": "exit", "code": N}, {"type": "sessions", "sessions": […]},
  {"type": "stopped", "sid"}, {"type": "log", "lines": […], "more": bool}.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from typing import Any

from launcher.manifest import MAX_BYTES as MAX_MANIFEST_BYTES
from pki.vocabulary import json_of, valid_sid

HEADER = struct.Struct(">I")
# The largest manifest in base64, with room for the other fields: a request larger than this is refused unread.
MAX_FRAME_BYTES = (MAX_MANIFEST_BYTES * 4) // 3 + 16 * 1024
STDIO_FDS = 3  # a run request carries exactly the caller's stdin, stdout and stderr
_HASH_CHARS = len("sha256:") + 64


class ProtocolError(ValueError):
    """The peer sent something this protocol does not allow: the words say what."""


@dataclass(frozen=True)
class RunRequest:
    manifest: bytes
    expect_hash: str
    best_effort: bool = False
    json: bool = False


@dataclass(frozen=True)
class PsRequest:
    pass


@dataclass(frozen=True)
class StopRequest:
    sid: str


@dataclass(frozen=True)
class LogsRequest:
    sid: str


@dataclass(frozen=True)
class WinchRequest:
    pass


Request = RunRequest | PsRequest | StopRequest | LogsRequest | WinchRequest


def encode_frame(message: dict[str, Any]) -> bytes:
    """One frame: its length, then the message as compact JSON."""
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {len(body)} bytes is larger than {MAX_FRAME_BYTES}")
    return HEADER.pack(len(body)) + body


class FrameReader:
    """Feed it bytes as they arrive; `next_frame` returns each whole frame's object, None while one is partial."""

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max_frame = max_frame

    def feed(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= HEADER.size:
            self._length()  # refuse an oversized frame as soon as its header is in, before its body is

    def _length(self) -> int:
        (length,) = HEADER.unpack_from(self._buffer)
        if length > self._max_frame:
            raise ProtocolError(f"a frame of {length} bytes is larger than the {self._max_frame} allowed")
        return length

    def next_frame(self) -> dict[str, Any] | None:
        if len(self._buffer) < HEADER.size:
            return None
        length = self._length()
        if len(self._buffer) < HEADER.size + length:
            return None
        body = bytes(self._buffer[HEADER.size:HEADER.size + length])
        del self._buffer[:HEADER.size + length]
        try:
            message = json_of(body)
        except ValueError as exc:  # not UTF-8, not JSON, too deep, a lone surrogate
            raise ProtocolError(f"a frame is not UTF-8 JSON: {exc}") from None
        if not isinstance(message, dict):
            raise ProtocolError("a frame is not a JSON object")
        return message

    @property
    def pending(self) -> int:
        return len(self._buffer)


def _field(message: dict[str, Any], name: str, kind: type, default: Any = None) -> Any:
    value = message.get(name, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(f"field {name!r} must be a {kind.__name__}")
    return value


_KNOWN_FIELDS = {"run": {"op", "manifest", "expect_hash", "best_effort", "json"}, "ps": {"op"},
                 "stop": {"op", "sid"}, "logs": {"op", "sid"}, "winch": {"op"}}


def parse_request(message: dict[str, Any]) -> Request:
    """The request a frame holds; ProtocolError for an unknown op, an unknown field or a value of the wrong kind."""
    op = message.get("op")
    if not isinstance(op, str) or op not in _KNOWN_FIELDS:
        raise ProtocolError(f"unknown op {op!r}: one of {', '.join(sorted(_KNOWN_FIELDS))}")
    unknown = sorted(set(message) - _KNOWN_FIELDS[op])
    if unknown:
        raise ProtocolError(f"unknown field(s) for {op}: {', '.join(unknown)}")
    if op == "run":
        return _run_request(message)
    if op in ("stop", "logs"):
        sid = _field(message, "sid", str)
        if not valid_sid(sid):
            raise ProtocolError("field 'sid' is not a session id (8 lowercase hex characters)")
        return StopRequest(sid) if op == "stop" else LogsRequest(sid)
    return PsRequest() if op == "ps" else WinchRequest()


def _run_request(message: dict[str, Any]) -> RunRequest:
    expect_hash = _field(message, "expect_hash", str)
    if len(expect_hash) != _HASH_CHARS or not expect_hash.startswith("sha256:"):
        raise ProtocolError("field 'expect_hash' is not sha256:<64 hex digits>")
    try:
        manifest = base64.b64decode(_field(message, "manifest", str), validate=True)
    except binascii.Error:
        raise ProtocolError("field 'manifest' is not base64") from None
    if len(manifest) > MAX_MANIFEST_BYTES:
        raise ProtocolError(f"the manifest is larger than {MAX_MANIFEST_BYTES} bytes")
    return RunRequest(manifest, expect_hash.lower(), _field(message, "best_effort", bool, False),
                      _field(message, "json", bool, False))


def run_message(manifest: bytes, expect_hash: str, *, best_effort: bool = False, summary_json: bool = False) -> dict[
        str, Any]:
    """The run request as the client sends it (with its stdio as SCM_RIGHTS)."""
    return {"op": "run", "manifest": base64.b64encode(manifest).decode(), "expect_hash": expect_hash,
            "best_effort": best_effort, "json": summary_json}
