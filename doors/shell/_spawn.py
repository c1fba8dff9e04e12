"""Start one command confined: fork from the door's one thread, confine the child, execve. No launcher import.

The child's steps, in order, each failure reported on a close-on-exec pipe as `<step> <errno>` before it
exits, so the door knows the command did not run (fail closed) and which step refused:
signals back to their defaults, its own session and process group, its cgroup, its stdio (with a tty, the
pty as its controlling terminal), its cwd (an fd
resolved beneath the workspace), its own Landlock layer (doors/shell/_landlock.py), every other fd closed,
execve. no_new_privs, seccomp, the door's Landlock domain, its uid and network namespace are inherited.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import signal
import termios
from collections.abc import Mapping
from dataclasses import dataclass, field

from doors.shell._landlock import restrict_self

STEPS = ("signals", "setsid", "cgroup", "stdio", "tty", "cwd", "landlock", "fds", "execve")
NOT_FOUND_STEP = "execve"


class NotStarted(Exception):
    """The command was not run: the step that refused and the kernel's errno."""

    def __init__(self, step: str, error: int) -> None:
        super().__init__(f"{step}: {os.strerror(error)}")
        self.step = step
        self.errno = error


@dataclass(frozen=True)
class Launch:
    """Everything the child needs, prepared by the door before it forks (the child allocates nothing new)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd_fd: int
    stdio: tuple[int, int, int]
    cgroup_procs: tuple[str, ...]
    ruleset_fd: int
    tty: bool = False  # stdio is a pty's slave: it becomes the controlling terminal
    max_fd: int = field(default_factory=lambda: resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def threads() -> int:
    """How many threads this process has (fork is safe only with one)."""
    return len(os.listdir("/proc/self/task"))


def _child(launch: Launch, report: int) -> None:
    step = "signals"
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        step = "setsid"
        os.setsid()
        step = "cgroup"
        for procs in launch.cgroup_procs:
            fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
            os.write(fd, b"0")
            os.close(fd)
        step = "stdio"
        for target, source in enumerate(launch.stdio):
            os.dup2(source, target, inheritable=True)
        if launch.tty:
            step = "tty"
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        step = "cwd"
        os.fchdir(launch.cwd_fd)
        step = "landlock"
        restrict_self(launch.ruleset_fd)
        step = "fds"
        os.closerange(3, report)
        os.closerange(report + 1, launch.max_fd)  # the fd limit, not 2**16: one close() per number
        step = "execve"
        os.execvpe(launch.argv[0], list(launch.argv), dict(launch.env))
    except OSError as exc:
        os.write(report, f"{step} {exc.errno or errno.EPERM}".encode())
    except BaseException:
        os.write(report, f"{step} {errno.EPERM}".encode())
    finally:
        os._exit(127)


def fork_command(launch: Launch) -> tuple[int, int]:
    """Fork the child; return (pid, the read end of its report pipe: EOF alone means execve succeeded)."""
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        _child(launch, report_w)
    os.close(report_w)
    return pid, report_r


def read_report(data: bytes) -> NotStarted | None:
    """What the child's report pipe said: nothing (it runs), or the step that refused."""
    if not data:
        return None
    step, _, number = data.decode(errors="replace").partition(" ")
    return NotStarted(step if step in STEPS else "unknown", int(number) if number.isdigit() else errno.EPERM)
