"""Start one command confined: a zygote made ahead, confined, waiting for its command; then the command's stdio,
cwd and argv sent to it, and execve. No launcher import.

Joining a v1 cgroup after the door sat idle waits for an RCU grace period (cgroup_threadgroup_rwsem: 10-17 ms
here, docs/decisions/shell.md); a zygote pays it between commands. The zygote made ahead is a fresh interpreter
the door spawns (`spawn_zygote`): a fork of the door would share the door's memory until the command's execve,
and the door then copied every page it wrote while it handled that command's request (a third of its CPU per
`true`, docs/decisions/bench.md, "shtrue"). A command that finds none waiting gets a fork (`fork_zygote`): no
interpreter start on its path. Both take the same steps (doors/shell/_zygote.py), each failure reported on a
close-on-exec pipe as `<step> <errno>` before it exits, so the door knows the command did not run (fail closed)
and which step refused. no_new_privs, seccomp, the door's Landlock domain, its uid and network namespace are
inherited (across the spawn's execve too).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

import _cffi_backend

from doors.shell._zygote import STEPS, ZYGOTE_READY, confine_and_exec, encode_launch

NOT_FOUND_STEP = "execve"
CPUCLOCK_SCHED = 2  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in the kernel's posix-timers.h
# Where doors/ is, and cffi's C module (Landlock's calls): all the spawned zygote needs beyond the stdlib.
ZYGOTE_PATH = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
               os.path.dirname(os.path.abspath(_cffi_backend.__file__)))
# The spawned zygote's program: those on its path (-S -I: no site, no PYTHON* variables, no cwd on the path);
# a failure to load it is reported as the first step's, so EOF on the report pipe still means execve.
ZYGOTE_MAIN = """import sys
sys.path += {path!r}
try:
    from doors.shell._zygote import main
except BaseException:
    import os
    os.write(int(sys.argv[2]), b"signals 1")
    os._exit(127)
main(sys.argv[1:])
"""


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
    """A confined process waiting for its command: its pid, the door's end of its control socket, and
    the read end of its report pipe (EOF alone means execve succeeded)."""

    pid: int
    control: socket.socket
    report: int


def threads() -> int:
    """How many threads this process has (fork is safe only with one)."""
    return len(os.listdir("/proc/self/task"))


def fork_zygote(cgroup_procs: tuple[str, ...], ruleset_fd: int) -> Zygote:
    """Fork a zygote that joins `cgroup_procs` and enters the ruleset's Landlock layer, then waits (the path of
    a command that finds none made ahead: no interpreter start, but a copy of the door's memory)."""
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    door_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        door_end.detach()  # closed with the rest; a socket object's close here could close a reused number
        confine_and_exec(cgroup_procs, ruleset_fd, child_end.detach(), report_w)
    os.close(report_w)
    child_end.close()
    door_end.setblocking(False)
    return Zygote(pid, door_end, report_r)


def spawn_zygote(cgroup_procs: tuple[str, ...], ruleset_fd: int) -> Zygote:
    """Start a zygote as a fresh interpreter (posix_spawn: the door's memory is neither copied nor shared), which
    takes the same steps (doors/shell/_zygote.py) and waits. Its control socket, report pipe and the ruleset are
    the only fds made inheritable for it, and only while it is spawned (the door has one thread)."""
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    door_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    passed = (child_end.fileno(), report_w, ruleset_fd)
    try:
        for fd in passed:
            os.set_inheritable(fd, True)
        program = ZYGOTE_MAIN.format(path=list(ZYGOTE_PATH))
        pid = os.posix_spawn(sys.executable, [sys.executable, "-S", "-I", "-c", program, *map(str, passed),
                                              *cgroup_procs], {})
    except BaseException:
        os.close(report_r)
        door_end.close()
        raise
    finally:
        os.set_inheritable(ruleset_fd, False)
        os.close(report_w)
        child_end.close()
    door_end.setblocking(False)
    return Zygote(pid, door_end, report_r)


def send_launch(zygote: Zygote, launch: Launch) -> None:
    """Send `launch` to the zygote (never blocks: one small message on an empty socket). A zygote that already
    ended (its setup failed) has said why on its report pipe: the door reads that next. ValueError (nothing
    sent) when argv or env cannot be exec'd (a NUL, a name with `=`)."""
    blob = encode_launch(launch.argv, launch.env, launch.tty)
    memfd = os.memfd_create("sharness-launch", os.MFD_CLOEXEC)
    try:
        written = 0
        while written < len(blob):  # pwrite: the zygote reads from offset 0, no file object or lseek between
            written += os.pwrite(memfd, blob[written:], written)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            socket.send_fds(zygote.control, [b"L"], [*launch.stdio, launch.cwd_fd, memfd])
        # A READY left unread would make the door's close reset the socket under the zygote's recvmsg (the
        # kernel's unix_release_sock), failing its launch: read it first (doors/shell/_spare.py reads it before
        # it hands a spawned zygote out; a zygote sent a launch before it is ready must not be a spawned one).
        with contextlib.suppress(OSError):
            zygote.control.recv(len(ZYGOTE_READY))
    finally:
        os.close(memfd)
        zygote.control.close()


def cpu_ns(pid: int) -> int:
    """The CPU a process has used so far (its CPU clock, ns: a command's own is what it used after this); 0 when
    it cannot be read."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | CPUCLOCK_SCHED)  # the kernel's process clock id for `pid`
    except OSError:
        return 0


def read_report(data: bytes) -> NotStarted | None:
    """What the child's report pipe said: nothing (it runs), or the step that refused."""
    if not data:
        return None
    step, _, number = data.decode(errors="replace").partition(" ")
    return NotStarted(step if step in STEPS else "unknown", int(number) if number.isdigit() else errno.EPERM)
