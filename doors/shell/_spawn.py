"""Start one command confined: a zygote forked ahead from the door's one thread, confined, waiting for its
command; then the command's stdio, cwd and argv sent to it, and execve. No launcher import.

Joining a v1 cgroup after the door sat idle waits for an RCU grace period (cgroup_threadgroup_rwsem: 10-17 ms
here, docs/decisions/shell.md), and a fork of the door and the child's steps cost ~5 ms more; a zygote pays
them between commands. Its steps, in order, each failure reported on a close-on-exec pipe as `<step> <errno>`
before it exits, so the door knows the command did not run (fail closed) and which step refused:
signals back to their defaults, its own session and process group, its cgroup, its own Landlock layer
(doors/shell/_landlock.py), every fd but its control socket and report pipe closed; all of it before it
receives anything. Then, once asked: one message on the control socket carrying stdin, stdout, stderr, the cwd
(an fd resolved beneath the workspace) and a memfd holding argv, env and tty as JSON; its stdio (with a tty,
the pty as its controlling terminal), its cwd, execve. no_new_privs, seccomp, the door's Landlock domain, its
uid and network namespace are inherited.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import resource
import signal
import socket
import termios
from collections.abc import Mapping
from dataclasses import dataclass

from doors.shell._landlock import restrict_self

STEPS = ("signals", "setsid", "cgroup", "landlock", "fds", "receive", "stdio", "tty", "cwd", "execve")
NOT_FOUND_STEP = "execve"
MAX_LAUNCH_BYTES = 8 * 1024 * 1024  # argv and env as JSON: far above what a run request may carry
LAUNCH_FDS = 5  # stdin, stdout, stderr, cwd, the memfd


class NotStarted(Exception):
    """The command was not run: the step that refused and the kernel's errno."""

    def __init__(self, step: str, error: int) -> None:
        super().__init__(f"{step}: {os.strerror(error)}")
        self.step = step
        self.errno = error


@dataclass(frozen=True)
class Launch:
    """What a zygote is sent for its command: everything prepared by the door."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd_fd: int
    stdio: tuple[int, int, int]
    tty: bool = False  # stdio is a pty's slave: it becomes the controlling terminal


@dataclass(frozen=True)
class Zygote:
    """A forked, confined process waiting for its command: its pid, the door's end of its control socket, and
    the read end of its report pipe (EOF alone means execve succeeded)."""

    pid: int
    control: socket.socket
    report: int


def threads() -> int:
    """How many threads this process has (fork is safe only with one)."""
    return len(os.listdir("/proc/self/task"))


def _close_all_but(keep: tuple[int, ...], max_fd: int) -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max_fd)  # the fd limit, not 2**16: one close() per number


def _receive(control: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """The launch message: its JSON and its fds (close-on-exec); None when the door closed the socket."""
    _, fds, _, _ = socket.recv_fds(control, 1, LAUNCH_FDS, socket.MSG_CMSG_CLOEXEC)
    if len(fds) != LAUNCH_FDS:
        return None
    memfd = fds.pop()
    with os.fdopen(memfd, "rb") as launch:
        return json.loads(launch.read(MAX_LAUNCH_BYTES)), fds


def _zygote(cgroup_procs: tuple[str, ...], ruleset_fd: int, control: socket.socket, report: int) -> None:
    step = "signals"
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
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
        _close_all_but((control.fileno(), report), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        step = "receive"
        received = _receive(control)
        if received is None:
            os._exit(0)  # the door left before asking: nothing to run, nothing to say
        launch, fds = received
        step = "stdio"
        for target, source in enumerate(fds[:3]):
            os.dup2(source, target, inheritable=True)
        if launch.get("tty"):
            step = "tty"
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        step = "cwd"
        os.fchdir(fds[3])
        step = "execve"
        argv = [str(arg) for arg in launch["argv"]]  # type: ignore[attr-defined]
        os.execvpe(argv[0], argv, dict(launch["env"]))  # type: ignore[call-overload]
    except OSError as exc:
        os.write(report, f"{step} {exc.errno or errno.EPERM}".encode())
    except BaseException:
        os.write(report, f"{step} {errno.EPERM}".encode())
    finally:
        os._exit(127)


def fork_zygote(cgroup_procs: tuple[str, ...], ruleset_fd: int) -> Zygote:
    """Fork a zygote that joins `cgroup_procs` and enters the ruleset's Landlock layer, then waits."""
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    door_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        door_end.detach()  # closed with the rest; a socket object's close here could close a reused number
        _zygote(cgroup_procs, ruleset_fd, child_end, report_w)
    os.close(report_w)
    child_end.close()
    door_end.setblocking(False)
    return Zygote(pid, door_end, report_r)


def send_launch(zygote: Zygote, launch: Launch) -> None:
    """Send `launch` to the zygote (never blocks: one small message on an empty socket). A zygote that already
    ended (its setup failed) has said why on its report pipe: the door reads that next."""
    memfd = os.memfd_create("sharness-launch", os.MFD_CLOEXEC)
    try:
        with open(memfd, "wb", closefd=False) as message:
            message.write(json.dumps({"argv": launch.argv, "env": dict(launch.env), "tty": launch.tty}).encode())
        os.lseek(memfd, 0, os.SEEK_SET)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            socket.send_fds(zygote.control, [b"L"], [*launch.stdio, launch.cwd_fd, memfd])
    finally:
        os.close(memfd)
        zygote.control.close()


def read_report(data: bytes) -> NotStarted | None:
    """What the child's report pipe said: nothing (it runs), or the step that refused."""
    if not data:
        return None
    step, _, number = data.decode(errors="replace").partition(" ")
    return NotStarted(step if step in STEPS else "unknown", int(number) if number.isdigit() else errno.EPERM)
