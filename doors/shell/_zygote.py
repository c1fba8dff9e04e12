"""A zygote's own steps, in a fork of the door or in a fresh interpreter the door spawned (`python -S -I`, `main`).

Either way the steps are these, in order, each failure reported on the report pipe as `<step> <errno>` before
it exits: signals back to their defaults, its own session and process group, its cgroup, its own Landlock
layer, every fd but its control socket and report pipe closed; then it waits for one launch message (stdin,
stdout, stderr, the cwd fd and a memfd holding the launch, SCM_RIGHTS), sets up its stdio, tty and cwd, and
execs. Spawned, it holds none of the door's memory (no copy of its TLS key, no pages the door must copy on its
next write: docs/decisions/shell.md). Imports only C modules besides `os` (a spawned zygote pays its imports
between commands, in CPU).
"""

from __future__ import annotations

import _signal
import _socket
import errno
import fcntl
import os
import resource
import sys
import termios
import warnings  # noqa: F401  os.execvpe's PATH lookup (os.get_exec_path) imports it: paid ahead, not per command

from doors.shell._landlock import restrict_self

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

STEPS = ("signals", "setsid", "cgroup", "landlock", "fds", "receive", "stdio", "tty", "cwd", "execve")
LAUNCH_FDS = 5  # stdin, stdout, stderr, cwd, the memfd
MAX_LAUNCH_BYTES = 8 * 1024 * 1024  # argv and env: far above what a run request may carry
ZYGOTE_READY = b"R"  # a spawned zygote's one message to the door: confined, waiting for its launch
RESET_SIGNALS = ("SIGPIPE", "SIGINT", "SIGTERM", "SIGHUP", "SIGCHLD", "SIGQUIT")


def encode_launch(argv: Sequence[str], env: Mapping[str, str], tty: bool) -> bytes:
    """The launch as NUL-separated bytes (what execve takes has no NUL): tty, argc, argv, then NAME=value."""
    items = [b"1" if tty else b"0", b"%d" % len(argv), *(os.fsencode(arg) for arg in argv)]
    for name, value in env.items():
        if not name or "=" in name:
            raise ValueError(f"an environment name cannot be {name!r}")
        items.append(os.fsencode(f"{name}={value}"))
    if any(b"\0" in item for item in items):
        raise ValueError("an argument or environment value holds a NUL byte")
    return b"\0".join(items)


def decode_launch(blob: bytes) -> tuple[list[bytes], dict[bytes, bytes], bool]:
    """(argv, env, tty) of an encoded launch; ValueError when it is not one."""
    items = blob.split(b"\0")
    if len(items) < 3 or items[0] not in (b"0", b"1") or not items[1].isdigit():
        raise ValueError("not a launch")
    argc = int(items[1])
    argv, assignments = items[2:2 + argc], items[2 + argc:]
    if len(argv) != argc or argc == 0:
        raise ValueError("not a launch")
    env = {}
    for assignment in assignments:
        name, equals, value = assignment.partition(b"=")
        if not equals:
            raise ValueError("not a launch")
        env[name] = value
    return argv, env, items[0] == b"1"


def _close_all_but(keep: tuple[int, ...], max_fd: int) -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max_fd)  # the fd limit, not 2**16: one close() per number


def _read_all(fd: int) -> bytes:
    """The memfd's bytes, read at their size (not into an 8 MiB buffer: two mmaps and a mremap per launch)."""
    size = os.fstat(fd).st_size
    if size > MAX_LAUNCH_BYTES:
        raise OSError(errno.E2BIG, "the launch is too large")
    pieces = []
    while size > 0 and (piece := os.read(fd, size)):
        pieces.append(piece)
        size -= len(piece)
    return b"".join(pieces)


def _receive(control_fd: int) -> tuple[bytes, list[int]] | None:
    """The launch message: the memfd's bytes and the other fds (close-on-exec); None when the door closed the
    socket without sending one (socket.recv_fds's parsing, on the C module)."""
    control = _socket.socket(fileno=control_fd)
    _, ancillary, _, _ = control.recvmsg(1, _socket.CMSG_SPACE(LAUNCH_FDS * 4), _socket.MSG_CMSG_CLOEXEC)
    fds: list[int] = []
    for level, kind, data in ancillary:  # not `array`: it loads collections.abc (3.5 ms of a spawned zygote's CPU)
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += memoryview(data[:len(data) - len(data) % 4]).cast("i")
    control.detach()
    if len(fds) != LAUNCH_FDS:
        return None
    memfd = fds.pop()
    try:
        return _read_all(memfd), list(fds)
    finally:
        os.close(memfd)


def _announce(control_fd: int) -> None:
    """Tell the door this zygote is confined and waiting (one READY message on the control socket), so a request
    that comes while a spawned interpreter is still starting is not made to wait for it. MSG_NOSIGNAL: SIGPIPE is
    back to its default here, and a door that already left is no failure of a step."""
    control = _socket.socket(fileno=control_fd)
    try:
        control.send(ZYGOTE_READY, _socket.MSG_NOSIGNAL)
    except OSError:
        pass
    finally:
        control.detach()


def confine_and_exec(cgroup_procs: Sequence[str], ruleset_fd: int, control_fd: int, report_fd: int,
                     announce: bool = False) -> None:
    """Take every step, wait for the launch, exec it; never returns (exit 127 after reporting a failed step).
    `announce` (the spawned zygote): say READY on the control socket once confined, before waiting."""
    step = "signals"
    try:
        _signal.set_wakeup_fd(-1)
        for name in RESET_SIGNALS:
            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, [])
        step = "setsid"
        os.setsid()
        step = "cgroup"
        for procs in cgroup_procs:
            fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
            os.write(fd, b"0")
            os.close(fd)
        step = "landlock"
        restrict_self(ruleset_fd)
        step = "fds"
        _close_all_but((control_fd, report_fd), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        if announce:
            _announce(control_fd)
        step = "receive"
        received = _receive(control_fd)
        if received is None:
            os._exit(0)  # the door left before asking: nothing to run, nothing to say
        blob, fds = received
        argv, env, tty = decode_launch(blob)
        step = "stdio"
        for target, source in enumerate(fds[:3]):
            os.dup2(source, target, inheritable=True)
        if tty:
            step = "tty"
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        step = "cwd"
        os.fchdir(fds[3])
        step = "execve"
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(report_fd, f"{step} {exc.errno or errno.EPERM}".encode())
    except BaseException:
        os.write(report_fd, f"{step} {errno.EPERM}".encode())
    finally:
        os._exit(127)


def main(argv: list[str]) -> None:
    """The spawned zygote: `CONTROL_FD REPORT_FD RULESET_FD PROCS...` (inherited fds, closed on its exec)."""
    control_fd, report_fd, ruleset_fd = (int(word) for word in argv[:3])
    for fd in (control_fd, report_fd, ruleset_fd):
        os.set_inheritable(fd, False)  # EOF on the report pipe must mean execve happened
    confine_and_exec(argv[3:], ruleset_fd, control_fd, report_fd, announce=True)


if __name__ == "__main__":
    main(sys.argv[1:])
