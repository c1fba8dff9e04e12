"""Requests the daemon must refuse without harm to a session it runs: malformed, oversized and slow ones, and
fds that are not stdio. Each gets a refusal frame and an audit event; the session meanwhile runs on."""

from __future__ import annotations

import os
import signal
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from _launchd import NOBODY, Daemon, Scratch, policy_document

from launcher.daemon.protocol import FrameReader, encode_frame, run_message
from launcher.daemon.wire import read_frame, send_frame

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def daemon(scratch: Scratch) -> Iterator[Daemon]:
    running = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 2}), "--request-deadline-s", "1").start()
    try:
        yield running
    finally:
        running.stop()


def _conn(daemon: Daemon) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(daemon.socket))
    return conn


def _answer(conn: socket.socket) -> dict[str, Any]:
    conn.settimeout(30)
    frame = read_frame(conn, FrameReader())
    conn.close()
    assert frame is not None
    return frame


def _raw(daemon: Daemon, data: bytes) -> dict[str, Any]:
    conn = _conn(daemon)
    conn.sendall(data)
    return _answer(conn)


def _with_fds(daemon: Daemon, fds: list[int]) -> dict[str, Any]:
    conn = _conn(daemon)
    send_frame(conn, run_message(b"{}", "sha256:" + "0" * 64), fds=fds)
    return _answer(conn)


def _refuse_wrong_fds(daemon: Daemon) -> int:
    """Run requests whose fds are not stdio, each refused saying which and why; how many were sent."""
    directory = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)
    path_only = os.open("/etc/hostname", os.O_PATH)
    event = os.eventfd(0)
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind("\0sh-test-launchd-listener")
    listening.listen()
    read_only = os.open("/dev/null", os.O_RDONLY)
    write_only = os.open("/dev/null", os.O_WRONLY)
    wrong = {
        "a directory": [directory, write_only, write_only],
        "an O_PATH handle": [path_only, write_only, write_only],
        "an anonymous inode": [read_only, event, write_only],
        "listening": [read_only, write_only, listening.fileno()],
        "writing only": [write_only, write_only, write_only],
        "reading only": [read_only, read_only, write_only],
        "not 2": [read_only, write_only],
        "not 4": [read_only, write_only, write_only, write_only],
    }
    try:
        for words, fds in wrong.items():
            answer = _with_fds(daemon, fds)
            assert answer["type"] == "refused" and words in answer["reason"], (words, answer)
        return len(wrong)
    finally:
        for fd in (directory, path_only, event, read_only, write_only):
            os.close(fd)
        listening.close()


def test_bad_requests_and_wrong_fds_are_refused_while_a_session_runs_on(daemon: Daemon, scratch: Scratch) -> None:
    manifest, digest = scratch.manifest("victim", scratch.workspace("victim", NOBODY),
                                        ["/bin/sh", "-c", "echo started; exec sleep 600"])
    victim = daemon.client(NOBODY, str(manifest), "--expect-hash", digest)
    sid = daemon.wait_for_sid(NOBODY, "victim")

    body = b'{"op": "nope"}'
    deep = b"[" * 5000
    lone = b'{"op": "stop", "sid": "\\ud800"}'
    answers = {
        "nested too deeply": _raw(daemon, struct.pack(">I", len(deep)) + deep),
        "a lone surrogate": _raw(daemon, struct.pack(">I", len(lone)) + lone),
        "not json": _raw(daemon, struct.pack(">I", 5) + b"hello"),
        "not an object": _raw(daemon, struct.pack(">I", 2) + b"[]"),
        "unknown op": _raw(daemon, struct.pack(">I", len(body)) + body),
        "unknown field": _raw(daemon, encode_frame({"op": "ps", "evil": 1})),
        "oversized": _raw(daemon, struct.pack(">I", 0x7FFFFFFF)),  # refused on the header, the body never read
        "slow": _raw(daemon, b"\x00\x00"),  # half a header, then nothing: the deadline refuses it
    }
    for case, answer in answers.items():
        assert answer["type"] == "refused" and answer["exit_code"] == 2, (case, answer)
    assert "larger than" in answers["oversized"]["reason"] and "not whole within" in answers["slow"]["reason"]

    wrong = _refuse_wrong_fds(daemon)

    assert [s["sid"] for s in daemon.ps(NOBODY)] == [sid] and victim.poll() is None  # unharmed
    refused = daemon.requests("refused")
    assert len(refused) == len(answers) + wrong
    assert daemon.run(NOBODY, "stop", sid).returncode == 0
    out, err = victim.communicate(timeout=120)
    assert victim.returncode == 128 + signal.SIGTERM and out.startswith("started"), err
