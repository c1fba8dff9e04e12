"""The app's pty relay: a real pty pair stands for the person's terminal; the app is a real process.

The core (plan_stdio, raw_modes, Channel) needs nothing. The relay tests fork an app that takes the
relay's slave as its controlling terminal, as spawn_app does. The session tests run `sharness-launch run`
with the person's pty as its stdio and controlling terminal, as from a shell.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launcher.kernel.confine import place_fds
from launcher.lifecycle.ptyrelay import (
    SCREEN_READ_PER_ROUND,
    Channel,
    PtyRelay,
    StdioPlan,
    piped_stdio,
    plan_stdio,
    raw_modes,
)
from launcher.policy.terminal_reset import reset_bytes
from tests._terminal import judged
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

WAIT_S = 60.0  # a guard against hanging, never a measure: every wait below ends on what it waits for


# -- the core -----------------------------------------------------------------------------------

def test_no_terminal_means_no_relay() -> None:
    assert plan_stdio([False, False, False], foreground=True) is None


def test_a_terminal_on_every_fd_is_relayed_both_ways() -> None:
    assert plan_stdio([True, True, True], True) == StdioPlan(to_slave=(0, 1, 2), terminal=0, keys_from=0, screen_to=1)


def test_only_the_terminal_fds_get_the_slave() -> None:
    # `app | less`: stdout is a pipe the app gets as it is; echo and stderr still show on the terminal
    assert plan_stdio([True, False, True], True) == StdioPlan((0, 2), terminal=0, keys_from=0, screen_to=2)
    # `echo x | app`: no keystrokes to relay
    assert plan_stdio([False, True, True], True) == StdioPlan((1, 2), terminal=1, keys_from=None, screen_to=1)
    # `app < in > out`, the terminal on stderr alone
    assert plan_stdio([False, False, True], True) == StdioPlan((2,), terminal=2, keys_from=None, screen_to=2)
    # only stdin a terminal: echo goes back to it
    assert plan_stdio([True, False, False], True) == StdioPlan((0,), terminal=0, keys_from=0, screen_to=0)


def test_in_the_background_the_relay_does_not_read_the_terminal() -> None:
    plan = plan_stdio([True, True, True], foreground=False)
    assert plan is not None and plan.keys_from is None


def test_raw_modes_pass_every_byte_and_leave_the_original_alone() -> None:
    lflag = termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN | termios.ECHOE
    cooked: list[Any] = [termios.ICRNL | termios.IXON | termios.IXANY, termios.OPOST | termios.ONLCR,
                         termios.CS7 | termios.PARENB, lflag, 38400, 38400, [bytes([n]) for n in range(32)]]
    raw = raw_modes(cooked)
    assert raw[0] == termios.IXANY and raw[1] == termios.ONLCR and raw[2] == termios.CS8
    assert raw[3] == termios.ECHOE
    assert raw[6][termios.VMIN] == 1 and raw[6][termios.VTIME] == 0
    assert raw[6][termios.VINTR] == cooked[6][termios.VINTR]
    assert cooked[3] & termios.ECHO and cooked[6][termios.VMIN] == bytes([termios.VMIN])


def test_a_channel_stops_reading_when_full_and_drops_what_a_dead_sink_cannot_take() -> None:
    channel = Channel(limit=4)
    channel.received(b"abcd")
    assert not channel.wants_read() and channel.wants_write()
    channel.sent(3)
    assert channel.wants_read() and bytes(channel.pending) == b"d"
    channel.sink_failed()
    channel.received(b"more")
    assert not channel.wants_write() and channel.wants_read()  # the source is still read, so the app never blocks
    channel.received(b"")
    assert channel.done


# -- the relay, with a forked app -----------------------------------------------------------------

@pytest.fixture
def person() -> Iterator[tuple[int, int]]:
    """The person's terminal: (master the test types into and reads the screen from, slave the launcher holds)."""
    master, slave = os.openpty()
    termios.tcsetwinsize(slave, (33, 101))
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def _fork_app(relay: PtyRelay, code: str) -> int:
    """An app as spawn_app makes it: own session, the relay's stdio in place, the slave its controlling terminal."""
    stdio = relay.app_stdio()
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            os.setsid()
            place_fds(stdio)
            relay.child_setup()
            os.execv(sys.executable, [sys.executable, "-c", code])
        finally:
            os._exit(127)
    relay.app_started()
    return pid


class Screen:
    """What reaches the person's terminal, read from its master while the relay runs."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.text = b""
        os.set_blocking(master, False)

    def pump(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self.text += os.read(self.master, 65536)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)


def _relay_until(relay: PtyRelay, screen: Screen, want: bytes) -> None:
    deadline = time.monotonic() + WAIT_S
    while want not in screen.text:
        assert time.monotonic() < deadline, f"{want!r} never reached the screen: {screen.text!r}"
        relay.run_once(0.05)
        screen.pump()


def _end(relay: PtyRelay, screen: Screen, pid: int) -> int:
    """Relay until the app exits (what was typed still has to reach it), then close the relay."""
    deadline = time.monotonic() + WAIT_S
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() >= deadline:  # fail this test alone: no app left for the next tests to find
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the app did not end: {screen.text!r}")
        relay.run_once(0.05)
        screen.pump()
    status = ended[1]
    relay.close()
    screen.pump()
    return status


@pytest.mark.parametrize(("is_tty", "piped"), [
    ([False, False, False], (0, 1, 2)), ([True, True, True], ()), ([True, False, True], (1,)),
    ([False, True, True], (0,)), ([True, False, False], (1, 2)),
])
def test_every_stdio_fd_that_is_not_a_terminal_gets_a_pipe(is_tty: list[bool], piped: tuple[int, ...]) -> None:
    assert piped_stdio(is_tty) == piped
    plan = plan_stdio(is_tty, foreground=True)
    assert set(piped) | set(plan.to_slave if plan else ()) == {0, 1, 2}  # each fd relayed one way, none passed


def test_no_pty_relay_without_a_terminal() -> None:
    read_end, write_end = os.pipe()
    try:
        with open(os.devnull, "wb") as devnull:
            assert PtyRelay.open((read_end, write_end, devnull.fileno())) is None
    finally:
        os.close(read_end)
        os.close(write_end)


def test_output_arrives_and_input_reaches_the_app(person: tuple[int, int]) -> None:
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    assert set(relay.app_stdio().values()) != {slave}  # the app never gets the person's terminal
    screen = Screen(master)
    code = "import os, sys; os.write(1, b'app: ready\\n'); os.write(2, b'app: got ' + sys.stdin.buffer.readline())"
    pid = _fork_app(relay, code)
    _relay_until(relay, screen, b"app: ready\r\n")
    screen.type(b"ping\n")
    _relay_until(relay, screen, b"app: got ping\r\n")
    assert os.WEXITSTATUS(_end(relay, screen, pid)) == 0
    assert b"ping\r\n" in screen.text  # echoed by the relay's pty, in the person's modes


def test_the_apps_mode_changes_reach_the_relays_pty_not_the_persons(person: tuple[int, int]) -> None:
    master, slave = person
    saved = termios.tcgetattr(slave)
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    assert termios.tcgetattr(slave) == raw_modes(saved)  # raw while relaying
    screen = Screen(master)
    code = ("import os, sys, termios, tty\n"
            "a = termios.tcgetattr(0); a[3] &= ~(termios.ECHO | termios.ECHOE); a[6][termios.VINTR] = b'\\x07'\n"
            "termios.tcsetattr(0, termios.TCSANOW, a)\n"
            "os.write(1, b'app: modes set\\n'); sys.stdin.buffer.readline()\n"
            "tty.setraw(0); os.write(1, b'app: raw\\n')\n"
            "os.read(0, 1)")
    pid = _fork_app(relay, code)
    _relay_until(relay, screen, b"app: modes set")
    assert termios.tcgetattr(slave) == raw_modes(saved)  # the person's terminal did not move
    app_modes = termios.tcgetattr(relay.master)  # a pty master's termios calls act on its slave
    assert not app_modes[3] & termios.ECHO and app_modes[6][termios.VINTR] == b"\x07"
    screen.type(b"secret\n")
    _relay_until(relay, screen, b"app: raw")
    assert b"secret" not in screen.text  # echo off held in the relay's pty
    assert termios.tcgetattr(slave) == raw_modes(saved)
    screen.type(b"x")
    assert os.WEXITSTATUS(_end(relay, screen, pid)) == 0
    assert termios.tcgetattr(slave) == saved  # and back as it was once the relay closed


def test_the_window_size_is_copied_at_open_and_on_sigwinch(person: tuple[int, int]) -> None:
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    assert termios.tcgetwinsize(relay.master) == (33, 101)
    screen = Screen(master)
    code = ("import os, signal, termios\n"
            "def winch(*_): os.write(1, b'app: winch %dx%d\\n' % termios.tcgetwinsize(0))\n"
            "signal.signal(signal.SIGWINCH, winch)\n"
            "os.write(1, b'app: size %dx%d\\n' % termios.tcgetwinsize(0)); os.read(0, 1)")
    pid = _fork_app(relay, code)
    _relay_until(relay, screen, b"app: size 33x101")
    termios.tcsetwinsize(slave, (50, 132))
    relay.on_signal(signal.SIGWINCH)  # what the supervisor does when SIGWINCH wakes it
    _relay_until(relay, screen, b"app: winch 50x132")  # the kernel told the app: it is the pty's foreground
    screen.type(b"x\n")
    assert os.WEXITSTATUS(_end(relay, screen, pid)) == 0


def test_the_persons_ctrl_c_is_the_apps_sigint(person: tuple[int, int]) -> None:
    """^C passes through the person's raw terminal; the relay's pty, the app's controlling terminal, signals it."""
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    screen = Screen(master)
    # SIG_DFL: Python's own handler only sets a flag, which a ^C landing between os.read's signal check and its
    # read() would leave unread, with the app blocked for good (seen once under load).
    app = "import os, signal; signal.signal(signal.SIGINT, signal.SIG_DFL); os.write(1, b'app: waiting\\n'); " \
          "os.read(0, 1); os._exit(3)"
    pid = _fork_app(relay, app)
    _relay_until(relay, screen, b"app: waiting")
    screen.type(b"\x03")
    status = _end(relay, screen, pid)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT


def test_the_persons_ctrl_z_does_not_stop_the_app(person: tuple[int, int]) -> None:
    """The app's group is orphaned (its parent is in another session): the kernel discards the pty's SIGTSTP,
    so ^Z cannot leave a stopped app that nobody resumes."""
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    screen = Screen(master)
    code = "import os, sys; os.write(1, b'app: waiting\\n'); os.write(1, b'app: got ' + sys.stdin.buffer.readline())"
    pid = _fork_app(relay, code)
    _relay_until(relay, screen, b"app: waiting")
    screen.type(b"\x1a")
    screen.type(b"still here\n")
    _relay_until(relay, screen, b"app: got still here")
    assert os.WEXITSTATUS(_end(relay, screen, pid)) == 0


def test_the_apps_last_words_are_passed_on_after_it_exits(person: tuple[int, int]) -> None:
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    screen = Screen(master)
    pid = _fork_app(relay, "import os; os.write(1, b'app: last words\\n')")
    os.waitpid(pid, 0)  # gone before the relay read a byte (the supervisor saw its pidfd first)
    relay.drain()
    assert relay.fds_to_watch() == {}  # the pty hung up once its output was read: nothing left to watch
    relay.close()
    _screen_until(screen, b"app: last words\r\n")


def test_the_terminal_is_restored_when_the_launcher_fails(person: tuple[int, int]) -> None:
    _, slave = person
    saved, flags = termios.tcgetattr(slave), fcntl.fcntl(slave, fcntl.F_GETFL)
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    with pytest.raises(RuntimeError, match="the launcher failed"), relay:
        assert termios.tcgetattr(slave) != saved and not os.get_blocking(slave)
        raise RuntimeError("the launcher failed")
    assert termios.tcgetattr(slave) == saved
    assert fcntl.fcntl(slave, fcntl.F_GETFL) == flags


def test_one_round_reads_a_bounded_amount_of_the_apps_output() -> None:
    """However much the app wrote, one round filters at most SCREEN_READ_PER_ROUND bytes of it, so the
    supervisor's loop comes back to the doors' status sockets soon (docs/decisions/ptyrelay.md)."""
    app_r, app_w = os.pipe()  # stands for the pty's master: 64 KiB waiting to be read
    screen_r, screen_w = os.pipe()  # the person's screen
    os.write(app_w, b"a" * 65536)
    relay = PtyRelay(StdioPlan((1,), terminal=1, keys_from=None, screen_to=1), (-1, screen_w, -1), app_r, -1, [])
    try:
        relay.on_readable(app_r)
        assert len(os.read(screen_r, 1 << 20)) == SCREEN_READ_PER_ROUND < 65536
    finally:
        for fd in (app_r, app_w, screen_r, screen_w):
            os.close(fd)


LEFT_BEHIND = (b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?25l\x1b[5;10r\x1b)0\x1b(0\x1b[8;30;40m"
               b"\x1b[?1h\x1b[4hlqqk")


def test_at_close_the_persons_screen_is_reset_after_the_apps_last_words(person: tuple[int, int]) -> None:
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    screen = Screen(master)
    pid = _fork_app(relay, f"import os; os.write(1, {LEFT_BEHIND!r} + b'app: last words')")
    assert os.WEXITSTATUS(_end(relay, screen, pid)) == 0
    _screen_until(screen, reset_bytes(at_line_start=False, on_alternate_screen=True))
    assert screen.text.endswith(b"app: last words" + reset_bytes(at_line_start=False, on_alternate_screen=True))
    state = judged(screen.text + b"sharness-launch: the verdict\r\n").clean()
    assert not any(state.values()), {name for name, left in state.items() if left}


def test_the_launchers_lines_go_among_the_apps_output_on_lines_of_their_own(person: tuple[int, int]) -> None:
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    screen = Screen(master)
    pid = _fork_app(relay, "import os, sys; os.write(1, b'\\x1b[8mapp: half a line'); sys.stdin.readline()")
    _relay_until(relay, screen, b"app: half a line")
    relay.say("sharness-launch: fs door: something failed")
    _relay_until(relay, screen, b"something failed")
    screen.type(b"\n")
    _end(relay, screen, pid)
    drawn = [piece for piece in judged(screen.text).drawn if "fs door" in piece.text]
    assert drawn and drawn[0].column == 0 and not drawn[0].concealed


def test_the_launchers_lines_wait_while_the_app_is_on_the_alternate_screen(person: tuple[int, int]) -> None:
    """A TUI's next redraw would cover them and its exit take them away: they show when it is back on the main
    screen, or after the reset at close."""
    master, slave = person
    relay = PtyRelay.open((slave, slave, slave))
    assert relay is not None
    screen = Screen(master)
    code = ("import os, sys\n"
            "os.write(1, b'\\x1b[?1049happ: on the alternate screen\\n'); sys.stdin.readline()\n"
            "os.write(1, b'\\x1b[?1049lapp: back\\n'); sys.stdin.readline()\n"
            "os.write(1, b'\\x1b[?1049happ: there again\\n'); sys.stdin.readline()")
    pid = _fork_app(relay, code)
    _relay_until(relay, screen, b"app: on the alternate screen")
    relay.say("sharness-launch: fs door: first")
    screen.type(b"\n")
    _relay_until(relay, screen, b"app: back")
    _relay_until(relay, screen, b"fs door: first")
    assert screen.text.index(b"fs door: first") > screen.text.index(b"app: back")
    screen.type(b"\n")
    _relay_until(relay, screen, b"app: there again")
    relay.say("sharness-launch: fs door: second")
    screen.type(b"\n")
    _end(relay, screen, pid)
    reset = reset_bytes(at_line_start=True, on_alternate_screen=True)
    assert screen.text.index(b"fs door: second") > screen.text.index(reset)
    final = [line.rstrip() for line in judged(screen.text).display]
    assert "sharness-launch: fs door: second" in final


def test_the_launchers_lines_go_to_its_stderr_when_that_is_not_the_terminal(person: tuple[int, int]) -> None:
    _, slave = person
    stderr_r, stderr_w = os.pipe()
    relay = PtyRelay.open((slave, slave, stderr_w))
    assert relay is not None
    try:
        relay.say("sharness-launch: net door: resolver failed")
        assert os.read(stderr_r, 4096) == b"sharness-launch: net door: resolver failed\n"
    finally:
        relay.close()
        os.close(stderr_r)
        os.close(stderr_w)


# -- real sessions --------------------------------------------------------------------------------

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


def _screen_until(screen: Screen, want: bytes) -> None:
    """Read the person's terminal until `want` shows (a pty passes written bytes on asynchronously)."""
    deadline = time.monotonic() + WAIT_S
    with selectors.DefaultSelector() as selector:
        selector.register(screen.master, selectors.EVENT_READ)
        while want not in screen.text:
            assert time.monotonic() < deadline, f"no {want!r}: {screen.text!r}"
            selector.select(1)
            screen.pump()


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
        _screen_until(screen, b"app: hello 33x101")
        assert termios.tcgetattr(slave) == raw_modes(saved)
        screen.type(b"ping\n")
        _screen_until(screen, b"app: got ping, echo off")
        assert termios.tcgetattr(slave) == raw_modes(saved)  # the app's tcsetattr moved its own pty only
        termios.tcsetwinsize(slave, (50, 132))  # the launcher, the terminal's foreground, gets SIGWINCH
        _screen_until(screen, b"app: winch 50x132")
        screen.type(b"hidden\n")
        assert process.wait(WAIT_S) == 5, (session_dir / "stderr").read_text()
        _screen_until(screen, b"app: bye hidden\r\n")  # its last words, passed on after it exited
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
