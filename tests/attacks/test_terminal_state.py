"""The person's terminal after a hostile app, and what a door can make the launcher print (issue 10, items 7-8).

Two real sessions of tests/attacks/terminal_app.py. In the first the person's terminal is the launcher's
stdin, stdout and stderr and its controlling terminal, as from a shell: the test reads it from the master
side and a terminal emulator (tests/_terminal.py) says what a person would see. In the second every stdio
fd is a pipe. Held by the screen filter (launcher/policy/csi_policy.py), the reset at the relay's close
(launcher/policy/terminal_reset.py), and the doors' stderr pipe the launcher reads
(launcher/policy/door_diagnostics.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from launcher.policy.terminal_reset import CLEAN_START
from tests._terminal import JudgedScreen, judged
from tests.attacks import terminal_app
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

pytestmark = pytest.mark.root

ROWS, COLUMNS = 30, 100
WAIT_S = 120.0  # a guard against hanging, never a measure
VERDICT = re.compile(rb"sharness-launch: session ([0-9a-f]{8}) ended: app exited with code 0")
DOOR_LINE = b"sharness-launch: fs door: handler for GET /v0/fs/files/" + terminal_app.DOOR_LOG_MARK.encode()


@dataclass
class Sessions:
    root: Path
    raw: bytes  # everything that reached the person's terminal
    exit_code: int
    modes_before: list[Any]
    modes_after: list[Any]
    piped: subprocess.CompletedProcess[bytes]

    @property
    def sid(self) -> str:
        found = VERDICT.search(self.raw)
        assert found, self.raw[-2000:]
        return found.group(1).decode()

    def audit(self, sid: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.root / "audit" / sid / "audit.jsonl").read_text().splitlines()]


def _controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _read_until_hangup(master: int) -> bytes:
    seen = b""
    deadline = time.monotonic() + WAIT_S
    with selectors.DefaultSelector() as selector:
        selector.register(master, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the launcher, the last holder of the terminal, is gone
                return seen
            if not chunk:
                return seen
            seen += chunk
    raise AssertionError(f"the launcher did not end; the terminal got {seen[-2000:]!r}")


def _on_a_terminal(command: list[str]) -> tuple[bytes, int, list[Any], list[Any]]:
    master, slave = os.openpty()
    termios.tcsetwinsize(slave, (ROWS, COLUMNS))
    before = termios.tcgetattr(slave)
    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               preexec_fn=_controlling_terminal)
    os.close(slave)
    try:
        raw = _read_until_hangup(master)
        code = process.wait(WAIT_S)
        return raw, code, before, termios.tcgetattr(master)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


@pytest.fixture(scope="module")
def sessions() -> Iterator[Sessions]:
    if os.geteuid() != 0:
        pytest.skip("needs root on a real kernel: run `sudo make test`")
    root = Path(tempfile.mkdtemp(prefix="sh-test-terminal-", dir="/var/lib"))
    root.chmod(0o755)
    try:
        (root / "ws").mkdir()
        (root / "audit").mkdir()
        app = Path(terminal_app.__file__)
        manifest = write_manifest(root, basic_manifest(root / "ws", [sys.executable, str(app)]))
        command = [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                   "--audit-dir", str(root / "audit")]
        raw, code, before, after = _on_a_terminal(command)
        piped = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=WAIT_S)
        yield Sessions(root, raw, code, before, after, piped)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _screen(sessions: Sessions) -> JudgedScreen:
    return judged(sessions.raw, COLUMNS, ROWS)


def test_the_verdict_is_the_last_thing_on_the_screen_visible_in_plain_text(sessions: Sessions) -> None:
    """The reset ends the app's alternate screen, starts a fresh line and erases what is below: the verdict
    shows, in ASCII, not concealed, in default colours, on a line of its own, and the forged one is gone."""
    assert sessions.exit_code == 0, sessions.raw[-3000:]
    screen = _screen(sessions)
    lines = [line.rstrip() for line in screen.display]
    verdict = next(index for index, line in enumerate(lines) if VERDICT.search(line.encode()))
    assert lines[verdict - 1] == "app: a line left unfinished", lines
    assert not any(terminal_app.FORGED_VERDICT.decode() in line for line in lines), lines
    drawn = [piece for piece in screen.drawn if VERDICT.search(piece.text.encode())]
    assert drawn and all(piece.column == 0 and not piece.concealed and not piece.line_drawing for piece in drawn)
    assert all(piece.attrs.fg == "default" and piece.attrs.bg == "default" for piece in drawn)


def test_the_terminal_is_reset_after_the_session(sessions: Sessions) -> None:
    """Alternate screen, mouse, bracketed paste, focus reports, cursor keys, hidden cursor, autowrap, scroll
    region, insert mode, G0/G1 line drawing, SGR: all back to a fresh terminal's (as the emulator sees it)."""
    state = _screen(sessions).clean()
    assert not any(state.values()), {name for name, left in state.items() if left}
    assert sessions.modes_after == sessions.modes_before  # termios too


@pytest.mark.parametrize("sequence", terminal_app.NEVER_PASSED, ids=[repr(seq) for seq in terminal_app.NEVER_PASSED])
def test_what_erases_the_scrollback_or_outlives_the_session_never_reaches_the_terminal(
        sessions: Sessions, sequence: bytes) -> None:
    """Dropped by the screen filter's CSI allow list: scrollback erasure, reverse screen, origin mode, local
    echo, newline mode, a locked keyboard, the kitty and modifyOtherKeys keyboard protocols, tab stops, DECCOLM."""
    assert terminal_app.SCREEN_END in sessions.raw  # the app's output did arrive
    assert sequence not in sessions.raw


def test_a_doors_log_of_text_the_app_chose_reaches_the_terminal_only_as_the_launchers_framed_line(
        sessions: Sessions) -> None:
    """The fs door logged the path the app chose (its handler failed: 500). Its stderr is a pipe the launcher
    reads: every occurrence on the terminal is the launcher's line, prefixed with the role, from a clean state."""
    assert '"status": 500' in sessions.raw.decode(errors="replace")  # the door did fail on that request
    mark = terminal_app.DOOR_LOG_MARK.encode()
    assert sessions.raw.count(mark) == sessions.raw.count(CLEAN_START + DOOR_LINE) >= 1, sessions.raw[-3000:]
    drawn = [piece for piece in _screen(sessions).drawn if DOOR_LINE.decode() in piece.text]
    assert drawn and all(piece.column == 0 and not piece.concealed and not piece.line_drawing for piece in drawn)
    counted = [event for event in sessions.audit(sessions.sid) if event["event"] == "door.diagnostics"]
    assert [(event["role"], event["shown"]) for event in counted] == [("fs", 1)]
    assert leftovers(sessions.sid) == {}


def test_with_pipes_a_doors_log_reaches_the_launchers_stderr_only_prefixed(sessions: Sessions) -> None:
    piped = sessions.piped
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert b'"status": 500' in piped.stdout
    lines = [line for line in piped.stderr.splitlines() if terminal_app.DOOR_LOG_MARK.encode() in line]
    assert len(lines) == 1 and lines[0].startswith(DOOR_LINE), piped.stderr[-3000:]
