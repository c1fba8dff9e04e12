"""A command's stdin, stdout and stderr: pipes, or one pty (`tty`) whose master the door holds.

stdin is /dev/null unless bytes were given or it was started with a pipe (then EOF once they are written or
the pipe is closed). With a tty, the pty carries both output streams (as `stdout`), its size is 24x80, and a
command given no stdin reads EOF (^D at the start of a line) rather than waiting for a person who is not there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios
from dataclasses import dataclass

PIPE_BYTES = 1024 * 1024  # fs.pipe-max-size's default: an unprivileged process may ask for up to it
TTY_ROWS, TTY_COLUMNS = 24, 80
TTY_EOF = b"\x04"


@dataclass(frozen=True)
class Stdio:
    """The child's fds 0, 1, 2; the door's ends; what the door closes once the child is forked."""

    child: tuple[int, int, int]
    stdout: int
    stderr: int
    stdin: int | None
    close_after_fork: tuple[int, ...]


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # a larger pipe is fewer reads and frames; the default still works
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    return read_end, write_end


def open_stdio(tty: bool, stdin: bool) -> Stdio:
    """Pipes (stdin a pipe only when `stdin`), or a pty for `tty` (its master both ways)."""
    if tty:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", TTY_ROWS, TTY_COLUMNS, 0, 0))
        quiet_r, quiet_w = os.pipe2(os.O_CLOEXEC)  # nothing writes stderr apart: the pty carries it
        return Stdio((slave, slave, slave), master, quiet_r, os.dup(master), (slave, quiet_w))
    out_r, out_w = _pipe()
    err_r, err_w = _pipe()
    if stdin:
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        return Stdio((in_r, out_w, err_w), out_r, err_r, in_w, (in_r, out_w, err_w))
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return Stdio((null, out_w, err_w), out_r, err_r, None, (null, out_w, err_w))
