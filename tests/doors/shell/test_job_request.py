"""poll, write and signal bodies: each refusal names its field. Pure."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from doors._refusal import DoorRefused
from doors.shell._job_request import MAX_WAIT_MS, Poll, Write, parse_poll, parse_signal, parse_write
from doors.shell._request import parse_run


def _row(parse: Any, body: Any) -> str:
    with pytest.raises(DoorRefused) as caught:
        parse(body)
    return caught.value.refusal.row


def test_poll_defaults_and_bounds() -> None:
    assert parse_poll({"id": "c3"}) == Poll("c3", 0, 0)
    assert parse_poll({"id": "c3", "after": 9, "wait_ms": MAX_WAIT_MS}) == Poll("c3", 9, MAX_WAIT_MS)
    assert _row(parse_poll, {"id": "c3", "wait_ms": MAX_WAIT_MS + 1}) == "shell.request.wait_ms"
    assert _row(parse_poll, {"id": "../x"}) == "shell.request.id"
    assert _row(parse_poll, {"id": "c1", "more": 1}) == "shell.request.body"


def test_write_takes_text_or_base64() -> None:
    assert parse_write({"id": "c1", "text": "hi"}) == Write("c1", b"hi", False)
    blob = base64.b64encode(b"\x00\xff").decode()
    assert parse_write({"id": "c1", "base64": blob, "eof": True}) == Write("c1", b"\x00\xff", True)
    assert _row(parse_write, {"id": "c1", "text": "a", "base64": blob}) == "shell.request.text"
    assert _row(parse_write, {"id": "c1", "base64": "!!"}) == "shell.request.base64"
    assert _row(parse_write, {"id": "c1", "eof": "yes"}) == "shell.request.eof"


@pytest.mark.parametrize(("name", "number"), [("TERM", 15), ("sigint", 2), ("KILL", 9), ("CONT", 18)])
def test_signals_by_name(name: str, number: int) -> None:
    assert parse_signal({"id": "c1", "signal": name}) == ("c1", number)


@pytest.mark.parametrize("name", ["SEGV", "9", "", "SYS"])
def test_other_signals_are_refused(name: str) -> None:
    assert _row(parse_signal, {"id": "c1", "signal": name}) == "shell.request.signal"


def test_a_stdin_pipe_is_for_start_only() -> None:
    assert _row(parse_run, {"argv": ["cat"], "stdin": "pipe"}) == "shell.request.stdin"
    started = parse_run({"argv": ["cat"], "stdin": "pipe"}, started=True)
    assert started.stdin_pipe and started.stdin is None
