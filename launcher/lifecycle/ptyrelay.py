"""Relay the app's stdio through a pseudo-terminal the launcher owns, as sudo's use_pty and ssh do.

When the launcher's stdin, stdout or stderr is the person's terminal, the app gets the slave of a fresh
pty instead (its controlling terminal): echo off, raw mode, window titles and TIOCSTI then reach the
relay's pty, never the person's terminal, whose modes are saved at open and put back at close, its screen
reset (launcher/policy/terminal_reset.py) before the launcher's verdict. Fds that are not terminals (pipes,
files) get pipes the launcher copies (piped_stdio, launcher/lifecycle/piperelay.py). The core (StdioPlan,
piped_stdio, raw_modes, Channel) decides; PtyRelay moves the bytes when the supervisor's selector says an fd
is ready, a bounded amount per round.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from launcher.lifecycle.poll_round import READ, WRITE, poll_once
from launcher.policy.termfilter import TermFilter
from launcher.policy.terminal_reset import launcher_line, reset_bytes

CHUNK = 65536
# The app's output read in one round: the screen filter's slowest input (~1 MiB/s, docs/decisions/ptyrelay.md)
# then costs the supervisor's loop at most ~16 ms before it serves the doors' status sockets again.
SCREEN_READ_PER_ROUND = 16384
BUFFER_LIMIT = 256 * 1024  # per direction: past it the relay stops reading, and the writer waits
DRAIN_IDLE_S = 0.25  # at the end: stop passing on the app's last output once nothing moved this long
DRAIN_MAX_S = 2.0  # ... or after this long in all (a leftover process may keep writing)
Modes = list[Any]  # a tcgetattr list: iflag, oflag, cflag, lflag, ispeed, ospeed, cc
WINSIZE_BYTES = 8  # struct winsize: rows, cols, xpixel, ypixel (unsigned short each)
HELD_LINES = 100  # the launcher's lines kept while the app is on the alternate screen (shown once it leaves)


# -- the core: what goes where, and what waits ------------------------------------------------------

@dataclass(frozen=True)
class StdioPlan:
    """Which of the launcher's stdio fds the app gets the pty's slave for, and where the relay reads and writes."""

    to_slave: tuple[int, ...]  # indexes 0, 1, 2 (stdin, stdout, stderr) whose launcher fd is a terminal
    terminal: int  # index of the person's terminal: modes and window size are taken from it
    keys_from: int | None  # index to read the person's keystrokes from (stdin, when a terminal in the foreground)
    screen_to: int  # index the app's terminal output goes to (stdout, else stderr, else stdin)


def plan_stdio(is_tty: Sequence[bool], foreground: bool) -> StdioPlan | None:
    """None when no stdio fd is a terminal; else which fds the relay stands in for."""
    ttys = tuple(index for index in range(3) if is_tty[index])
    if not ttys:
        return None
    screen_to = next(index for index in (1, 2, 0) if index in ttys)
    keys_from = 0 if is_tty[0] and foreground else None
    return StdioPlan(to_slave=ttys, terminal=ttys[0], keys_from=keys_from, screen_to=screen_to)


def piped_stdio(is_tty: Sequence[bool]) -> tuple[int, ...]:
    """The indexes whose launcher fd is not a terminal: the app gets a pipe the launcher copies for each
    (launcher/lifecycle/piperelay.py), never the launcher's own file, which it could truncate or write after
    the launcher's lines."""
    return tuple(index for index in range(3) if not is_tty[index])


def raw_modes(attrs: Modes) -> Modes:
    """cfmakeraw on a tcgetattr list: keystrokes pass byte for byte (^C too), output unprocessed."""
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = attrs
    iflag &= ~(termios.IGNBRK | termios.BRKINT | termios.PARMRK | termios.ISTRIP | termios.INLCR
               | termios.IGNCR | termios.ICRNL | termios.IXON)
    oflag &= ~termios.OPOST
    lflag &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.ISIG | termios.IEXTEN)
    cflag = (cflag & ~(termios.CSIZE | termios.PARENB)) | termios.CS8
    cc = list(cc)
    cc[termios.VMIN], cc[termios.VTIME] = 1, 0
    return [iflag, oflag, cflag, lflag, ispeed, ospeed, cc]


@dataclass
class Channel:
    """One direction of the relay: bytes read from a source wait here until the sink takes them."""

    limit: int = BUFFER_LIMIT
    pending: bytearray = field(default_factory=bytearray)
    source_open: bool = True
    sink_open: bool = True
    screen_filter: TermFilter | None = None  # app → person: its escape sequences pass only through this
    at_line_start: bool = True  # what was queued last ends a line (the launcher's own last line did)

    def wants_read(self) -> bool:
        return self.source_open and len(self.pending) < self.limit

    def wants_write(self) -> bool:
        return self.sink_open and bool(self.pending)

    def received(self, data: bytes) -> None:
        """What the source gave; b"" is its end."""
        if not data:
            self.source_open = False
            if self.screen_filter is not None:
                self.queue(self.screen_filter.end())
        elif self.sink_open:
            self.queue(data if self.screen_filter is None else self.screen_filter.feed(data))

    def queue(self, shown: bytes) -> None:
        """Bytes for the sink, already filtered (the launcher's own lines come this way too)."""
        if shown and self.sink_open:
            self.pending += shown
            self.at_line_start = shown.endswith(b"\n")

    def sent(self, count: int) -> None:
        del self.pending[:count]

    def sink_failed(self) -> None:
        """The sink is gone: what waits and what comes later is dropped (the source is still read)."""
        self.sink_open = False
        self.pending.clear()

    @property
    def done(self) -> bool:
        return not self.source_open and not self.wants_write()


# -- the I/O -------------------------------------------------------------------------------------

def _foreground(fd: int) -> bool:
    """False when `fd` is our controlling terminal and another process group has it (we run in the background)."""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:  # ENOTTY: not our controlling terminal, so no job control stops us for using it
        return True


def _set_modes(fd: int, attrs: Modes, when: int = termios.TCSADRAIN) -> None:
    """tcsetattr with SIGTTOU blocked: a launcher moved to the background is not stopped for it."""
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTTOU])
    try:
        termios.tcsetattr(fd, when, attrs)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _read_into(fd: int, channel: Channel, size: int = CHUNK) -> None:
    try:
        data = os.read(fd, size)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:  # EIO: the other side of the pty hung up
        data = b""
    channel.received(data)


def _write_from(fd: int, channel: Channel) -> None:
    if not channel.wants_write():
        return
    try:
        count = os.write(fd, channel.pending)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:  # EIO, EPIPE, EBADF (a read-only terminal): nowhere to put it
        channel.sink_failed()
        return
    channel.sent(count)


class PtyRelay:
    """The app's pty and the person's terminal, relayed from the launcher's single-threaded loop."""

    def __init__(self, plan: StdioPlan, launcher_fds: tuple[int, int, int], master: int, slave: int,
                 saved_modes: Modes) -> None:
        self._plan = plan
        self._fds = launcher_fds
        self._master = master
        self._slave: int | None = slave
        self._saved_modes = saved_modes
        self._raw = False
        self._saved_flags: dict[int, int] = {}
        self._keys = Channel(source_open=plan.keys_from is not None)  # person → app
        self._filter = TermFilter()
        self._screen = Channel(screen_filter=self._filter)  # app → person, filtered (launcher/policy/termfilter.py)
        self._held_lines: list[str] = []  # the launcher's lines waiting for the app to leave the alternate screen
        self._lines_not_held = 0
        self._closed = False

    @classmethod
    def open(cls, launcher_fds: tuple[int, int, int] = (0, 1, 2)) -> PtyRelay | None:
        """A relay for the terminal among `launcher_fds` (stdin, stdout, stderr); None when none is one."""
        plan = plan_stdio([os.isatty(fd) for fd in launcher_fds], _foreground(launcher_fds[0]))
        if plan is None:
            return None
        terminal = launcher_fds[plan.terminal]
        saved = termios.tcgetattr(terminal)
        master, slave = os.openpty()  # both close-on-exec; glibc opens the slave O_NOCTTY
        relay = cls(plan, launcher_fds, master, slave, saved)
        try:
            _set_modes(slave, saved, termios.TCSANOW)  # the app starts with the person's modes
            relay.on_sigwinch()
            relay._start_relaying()
        except BaseException:
            relay.close()
            raise
        return relay

    def _start_relaying(self) -> None:
        os.set_blocking(self._master, False)
        screen = self._fds[self._plan.screen_to]
        # Saved before any change: stdin and stdout are often one open file, sharing its flags.
        self._saved_flags = {fd: fcntl.fcntl(fd, fcntl.F_GETFL) for fd in set(self._fds)}
        os.set_blocking(screen, False)  # a stalled terminal must not stall the supervisor
        if self._plan.keys_from is not None:
            _set_modes(self._fds[0], raw_modes(self._saved_modes), termios.TCSAFLUSH)
            self._raw = True

    # -- the app's side --
    def app_stdio(self) -> dict[int, int]:
        """Target fd → fd for spawn_app: the slave where the launcher has a terminal, its own fd elsewhere."""
        assert self._slave is not None, "app_stdio() after app_started()"
        return {index: self._slave if index in self._plan.to_slave else self._fds[index] for index in range(3)}

    def child_setup(self) -> None:
        """In the app's child, after setsid and with its stdio in place: the pty becomes its controlling terminal."""
        try:
            fcntl.ioctl(self._plan.to_slave[0], termios.TIOCSCTTY, 0)
        except OSError as exc:
            raise RuntimeError(f"the launcher's pty cannot become the app's controlling terminal "
                               f"(TIOCSCTTY: {exc.strerror})") from exc

    def app_started(self) -> None:
        """In the launcher once the app is forked: drop our slave, so the pty hangs up when the app's side is gone."""
        if self._slave is not None:
            os.close(self._slave)
            self._slave = None

    # -- the supervisor's loop --
    def fds_to_watch(self) -> dict[int, int]:
        """fd → selectors events the relay waits for now (changes as buffers fill and drain)."""
        wanted: dict[int, int] = {}

        def want(fd: int, events: int) -> None:
            wanted[fd] = wanted.get(fd, 0) | events

        if self._plan.keys_from is not None and self._keys.wants_read():
            want(self._fds[self._plan.keys_from], READ)
        if self._keys.wants_write():
            want(self._master, WRITE)
        if self._screen.wants_read():
            want(self._master, READ)
        if self._screen.wants_write():
            want(self._fds[self._plan.screen_to], WRITE)
        return wanted

    def on_ready(self, fd: int, events: int) -> None:
        if events & READ:
            self.on_readable(fd)
        if events & WRITE:
            self.on_writable(fd)

    def on_readable(self, fd: int) -> None:
        if fd == self._master:
            _read_into(fd, self._screen, SCREEN_READ_PER_ROUND)
            if self._held_lines and not self._filter.on_alternate_screen:
                self._show_held_lines()
            _write_from(self._fds[self._plan.screen_to], self._screen)
        elif self._plan.keys_from is not None and fd == self._fds[self._plan.keys_from]:
            _read_into(fd, self._keys)
            _write_from(self._master, self._keys)

    def on_writable(self, fd: int) -> None:
        if fd == self._master:
            _write_from(fd, self._keys)
        if fd == self._fds[self._plan.screen_to]:
            _write_from(fd, self._screen)

    def say(self, line: str) -> None:
        """One line of the launcher's (inert text) while the app runs: on the person's terminal among the app's
        output, on a line of its own from a clean state, when stderr is that terminal; else on stderr."""
        if 2 not in self._plan.to_slave:
            with contextlib.suppress(OSError):
                os.write(self._fds[2], line.encode() + b"\n")
            return
        # On the alternate screen the app's next redraw would cover the line, and leaving it would take it away:
        # it waits until the app is back on the main screen, or for the reset at close.
        if len(self._held_lines) < HELD_LINES:
            self._held_lines.append(line)
        else:
            self._lines_not_held += 1
        if not self._filter.on_alternate_screen:
            self._show_held_lines()

    def _show_held_lines(self) -> None:
        if self._lines_not_held:
            self._held_lines.append(f"sharness-launch: {self._lines_not_held} more line(s) of the doors were not "
                                    "shown (the audit log counts them)")
        for line in self._held_lines:
            self._screen.queue(launcher_line(line, self._screen.at_line_start))
        self._held_lines.clear()
        self._lines_not_held = 0

    def on_signal(self, signum: int) -> None:
        if signum == signal.SIGWINCH:
            self.on_sigwinch()

    def on_sigwinch(self) -> None:
        """Copy the person's window size to the pty (the kernel then sends the app SIGWINCH)."""
        with contextlib.suppress(OSError):
            size = fcntl.ioctl(self._fds[self._plan.terminal], termios.TIOCGWINSZ, bytes(WINSIZE_BYTES))
            fcntl.ioctl(self._master, termios.TIOCSWINSZ, size)

    def run_once(self, timeout_s: float) -> bool:
        """One round on the relay's own poll (the drain at the end; tests); False when nothing was ready."""
        return poll_once(self, timeout_s)

    # -- the end --
    def drain(self, idle_s: float = DRAIN_IDLE_S, max_s: float = DRAIN_MAX_S) -> None:
        """After the app ended: pass on what it wrote last, until the pty hangs up or nothing moves."""
        self._keys.source_open = False
        self._keys.sink_failed()
        deadline = time.monotonic() + max_s
        while not self._screen.done and (left := deadline - time.monotonic()) > 0:
            if not self.run_once(min(idle_s, left)):
                return

    def reset_screen(self, max_s: float = DRAIN_MAX_S) -> None:
        """Put the person's screen back to its defaults (modes, character sets, attributes, scroll region) and
        start a fresh line with nothing of the app's below it, then the launcher's lines the alternate screen held;
        wait at most `max_s` for the terminal to take it."""
        self._screen.queue(reset_bytes(self._screen.at_line_start, self._filter.on_alternate_screen))
        self._screen.at_line_start = True  # the reset ends at a fresh line's start (its last step erases below)
        self._show_held_lines()
        screen = self._fds[self._plan.screen_to]
        deadline = time.monotonic() + max_s
        while self._screen.wants_write() and (left := deadline - time.monotonic()) > 0:
            _write_from(screen, self._screen)
            if self._screen.wants_write():
                select.select([], [screen], [], left)

    def restore(self) -> None:
        """Put the person's terminal back as it was at open: its modes and its fds' flags. Idempotent."""
        if self._raw:
            with contextlib.suppress(OSError, termios.error):
                _set_modes(self._fds[0], self._saved_modes)
            self._raw = False
        for fd, flags in self._saved_flags.items():
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)
        self._saved_flags.clear()

    def close(self) -> None:
        """Drain, reset the person's screen, restore its modes, and close the pty; safe on any path, more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._slave is None:  # the app was started: its last words are in the pty, then the reset
                with contextlib.suppress(OSError):
                    self.drain()
                    self.reset_screen()
        finally:
            self.restore()
            self.app_started()
            with contextlib.suppress(OSError):
                os.close(self._master)

    def __enter__(self) -> PtyRelay:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    @property
    def master(self) -> int:
        return self._master

    @property
    def plan(self) -> StdioPlan:
        return self._plan
