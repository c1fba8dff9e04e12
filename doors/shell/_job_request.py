"""The wire form of poll, write and signal on a started command. Pure: a JSON body in, a record out."""

from __future__ import annotations

import base64
import binascii
import re
import signal
from dataclasses import dataclass
from typing import Any

from doors.shell._request import MAX_STDIN_BYTES, bad

MAX_WAIT_MS = 20_000  # under the client's 30 s socket timeout
_ID = re.compile(r"c[0-9]{1,12}")
# What a client may send a command: the ones agents use to stop, pause, resume or nudge it.
SIGNALS = {name: int(getattr(signal, f"SIG{name}")) for name in
           ("INT", "TERM", "KILL", "HUP", "QUIT", "USR1", "USR2", "STOP", "CONT")}


@dataclass(frozen=True)
class Poll:
    command_id: str
    after: int  # the last seq the client has: frames after it are returned
    wait_ms: int  # how long to wait for a new frame when there is none


@dataclass(frozen=True)
class Write:
    command_id: str
    data: bytes
    eof: bool  # close stdin after writing


def _object(body: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad("body", "the body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise bad("body", f"unknown field(s): {unknown[:5]}")
    if not isinstance(body.get("id"), str) or _ID.fullmatch(body["id"]) is None:
        raise bad("id", "id must be a command id as start returned it")
    return body


def _count(body: dict[str, Any], field: str, default: int, high: int) -> int:
    value = body.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise bad(field, f"{field} must be an integer from 0 to {high}")
    return value


def parse_poll(body: Any) -> Poll:
    """`{id, after?, wait_ms?}`."""
    checked = _object(body, ("id", "after", "wait_ms"))
    return Poll(checked["id"], _count(checked, "after", 0, 2**53), _count(checked, "wait_ms", 0, MAX_WAIT_MS))


def parse_write(body: Any) -> Write:
    """`{id, text? | base64?, eof?}`."""
    checked = _object(body, ("id", "text", "base64", "eof"))
    if "text" in checked and "base64" in checked:
        raise bad("text", "give text or base64, not both")
    if "base64" in checked:
        try:
            data = base64.b64decode(str(checked["base64"]), validate=True)
        except (binascii.Error, ValueError):
            raise bad("base64", "base64 is not valid base64") from None
    elif isinstance(checked.get("text", ""), str):
        data = str(checked.get("text", "")).encode()
    else:
        raise bad("text", "text must be a string")
    if len(data) > MAX_STDIN_BYTES:
        raise bad("text", f"at most {MAX_STDIN_BYTES} bytes a write", status=413)
    eof = checked.get("eof", False)
    if not isinstance(eof, bool):
        raise bad("eof", "eof must be true or false")
    return Write(checked["id"], data, eof)


def parse_signal(body: Any) -> tuple[str, int]:
    """`{id, signal}`: the command id and the signal's number."""
    checked = _object(body, ("id", "signal"))
    name = str(checked.get("signal", "")).upper().removeprefix("SIG")
    if name not in SIGNALS:
        raise bad("signal", f"signal must be one of {sorted(SIGNALS)}")
    return checked["id"], SIGNALS[name]
