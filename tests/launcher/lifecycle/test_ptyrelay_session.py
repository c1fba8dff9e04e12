"""`sharness-launch run` from a terminal: the person's pty as its stdio and controlling terminal, as from a
shell; and without one, the fds passed as they are."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pty_screen import WAIT_S, Screen, screen_until

from launcher.lifecycle.ptyrelay import raw_modes
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

SESSION_APP = """\
import os, signal, sys, termios
def winch(*_):
    os.write(1, b'app: winch %dx%d\\n' % termios.tcgetwinsize(0))
signal.signal(signal.SIGWINCH, winch)
os.write(1, b'app: hello %dx%d\\n' % termios.tcgetwinsize(0))
line = sys.stdin.buffer.readline()
modes = termios.tcgetattr(0)
modes[3] &= ~termios.ECHO
modes[6][termios.VINTR] = b'\\x07'
termios.tcsetattr(0, termios.TCSANOW, modes)
os.write(1, b'app: got ' + line.strip() + b', echo off\\n')
line = sys.stdin.buffer.readline()
os.write(1, b'app: bye ' + line.strip() + b'\\n')
os.write(2, b'app: stderr is not a terminal here\\n')
sys.exit(5)
"""

FDS_APP = "import os; print({fd: os.readlink(f'/proc/self/fd/{fd}')[:5] for fd in (0, 1, 2)}, flush=True)"


@pytest.fixture
def session_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sh-test-pty-", dir="/tmp"))
    path.chmod(0o755)
    (path / "workspace").mkdir()
    (path / "audit").mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _command(session_dir: Path, code: str) -> list[str]:
    manifest = write_manifest(session_dir, basic_manifest(session_dir / "workspace", [sys.executable, "-c", code]))
    return [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
            "--audit-dir", str(session_dir / "audit")]


def _controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.root
def test_a_session_from_a_terminal_relays_and_leaves_the_terminal_as_it_was(
        person: tuple[int, int], session_dir: Path) -> None:
    master, slave = person
    saved = termios.tcgetattr(slave)
    stderr = (session_dir / "stderr").open("wb")
    process = subprocess.Popen(_command(session_dir, SESSION_APP), stdin=slave, stdout=slave, stderr=stderr,
                               start_new_session=True, preexec_fn=_controlling_terminal)
    screen = Screen(master)
    try:
        screen_until(screen, b"app: hello 33x101")
        assert termios.tcgetattr(slave) == raw_modes(saved)
        screen.type(b"ping\n")
        screen_until(screen, b"app: got ping, echo off")
        assert termios.tcgetattr(slave) == raw_modes(saved)  # the app's tcsetattr moved its own pty only
        termios.tcsetwinsize(slave, (50, 132))  # the launcher, the terminal's foreground, gets SIGWINCH
        screen_until(screen, b"app: winch 50x132")
        screen.type(b"hidden\n")
        assert process.wait(WAIT_S) == 5, (session_dir / "stderr").read_text()
        screen_until(screen, b"app: bye hidden\r\n")  # its last words, passed on after it exited
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(WAIT_S)
        stderr.close()
    assert screen.text.count(b"hidden") == 1  # typed with the app's echo off: not echoed
    assert termios.tcgetattr(slave) == saved
    assert os.get_blocking(slave)  # the launcher's O_NONBLOCK on the shared open file is gone too
    ended = (session_dir / "stderr").read_text()
    assert "app: stderr is not a terminal here" in ended  # the launcher's stderr, a file, was passed as it is
    sid = ended.split("sharness-launch: session ", 1)[1].split()[0]
    assert leftovers(sid) == {}


@pytest.mark.root
def test_a_session_without_a_terminal_passes_its_fds(session_dir: Path) -> None:
    done = subprocess.run(_command(session_dir, FDS_APP), stdin=subprocess.PIPE, capture_output=True, text=True,
                          timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    assert "{0: 'pipe:', 1: 'pipe:', 2: 'pipe:'}" in done.stdout
