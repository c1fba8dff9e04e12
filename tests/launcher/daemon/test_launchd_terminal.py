"""The caller's terminal through the daemon: the app gets a terminal of the launcher's pty (never the caller's
own), sized as the caller's, and what it writes reaches the caller through the same screen filter as with sudo."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import termios

import pytest
from _launchd import NOBODY, Daemon, Scratch, policy_document

pytestmark = [pytest.mark.root, pytest.mark.slow]

APP = ("test -t 0 && test -t 1 && echo app-has-a-terminal; stty size; "
       "printf 'before\\033]0;retitled-by-the-app\\007after\\n'")


def _read_all(master: int, process_done: object) -> bytes:
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        assert ready, "the terminal went quiet before the client ended"
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every slave fd closed
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_the_app_gets_a_pty_sized_as_the_callers_terminal_and_filtered(scratch: Scratch) -> None:
    daemon = Daemon(scratch, policy_document({"uid": NOBODY})).start()
    try:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 37, 111, 0, 0))
        manifest, digest = scratch.manifest("tty", scratch.workspace("tty", NOBODY), ["/bin/sh", "-c", APP])
        client = daemon.client(NOBODY, str(manifest), "--expect-hash", digest, stdin=slave, stdout=slave,
                               stderr=slave)
        os.close(slave)
        screen = _read_all(master, client).decode(errors="replace")
        assert client.wait(timeout=60) == 0, screen
        os.close(master)
    finally:
        daemon.stop()
    assert "app-has-a-terminal" in screen and "37 111" in screen, screen
    assert "retitled-by-the-app\x07" not in screen and "before" in screen and "after" in screen, repr(screen)


def _read_until(master: int, marker: str) -> str:
    seen = ""
    while marker not in seen:
        ready, _, _ = select.select([master], [], [], 60)
        assert ready, f"no {marker!r} on the terminal: {seen!r}"
        seen += os.read(master, 65536).decode(errors="replace")
    return seen


def test_a_window_change_of_the_caller_reaches_the_app(scratch: Scratch) -> None:
    daemon = Daemon(scratch, policy_document({"uid": NOBODY})).start()
    app = "trap 'stty size; exit 0' WINCH; echo waiting; while :; do sleep 0.05; done"
    try:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        manifest, digest = scratch.manifest("winch", scratch.workspace("winch", NOBODY), ["/bin/sh", "-c", app])
        client = daemon.client(NOBODY, str(manifest), "--expect-hash", digest, stdin=slave, stdout=slave,
                               stderr=slave)
        os.close(slave)
        _read_until(master, "waiting")
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
        client.send_signal(signal.SIGWINCH)  # what the kernel sends the terminal's foreground job
        _read_until(master, "50 132")
        assert client.wait(timeout=60) == 0
        os.close(master)
    finally:
        daemon.stop()
