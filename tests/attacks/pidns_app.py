"""The pid-namespace app: runs confined as the app of a real session and looks for the host's processes
and host-wide /proc files: kill(pid, 0) over the whole pid range, pidfd_open on the launcher's and the
doors' pids, its own init (signals, pidfd_getfd), /proc's listing and its global files.

It judges nothing: each attempt prints `{"probe": name, "errno": NAME or null, ...}`. Protocol: it prints
`ready`, reads one JSON line of targets (host pids, the host's pid_max), attacks, prints `done`, waits for
`end` and exits 0. `python pidns_app.py outside TARGETS` runs the targeted attempts once more, in the host's
pid namespace and /proc (the test runs it as the app's uid: the layer the namespace adds, shown missing).
Standard library and ctypes only.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import sys
from collections.abc import Callable

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
NR_PIDFD_SEND_SIGNAL, NR_PIDFD_OPEN, NR_PIDFD_GETFD = 424, 434, 438  # the same on every architecture
GLOBAL_FILES = ("interrupts", "key-users", "meminfo", "stat", "sys/kernel/pid_max", "mounts")


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def errno_name(number: int) -> str:
    return errno.errorcode.get(number, str(number))


def attempt(probe: str, action: Callable[[], object], **extra: object) -> None:
    """Run one attempt; report the errno it failed with, or null and what it returned."""
    try:
        result = action()
    except OSError as exc:
        report(probe, errno=errno_name(exc.errno or 0), **extra)
        return
    report(probe, errno=None, result=repr(result), **extra)


def syscall(number: int, *args: int) -> int:
    result = LIBC.syscall(ctypes.c_long(number), *(ctypes.c_long(arg) for arg in args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def open_pidfd(pid: int) -> str:
    os.close(syscall(NR_PIDFD_OPEN, pid, 0))
    return "opened"


def signal_by_pidfd(pid: int, signum: int) -> None:
    pidfd = syscall(NR_PIDFD_OPEN, pid, 0)
    try:
        syscall(NR_PIDFD_SEND_SIGNAL, pidfd, signum, 0, 0)
    finally:
        os.close(pidfd)


def steal_fd(pid: int, fd: int) -> int:
    pidfd = syscall(NR_PIDFD_OPEN, pid, 0)
    try:
        stolen = syscall(NR_PIDFD_GETFD, pidfd, fd, 0)
        os.close(stolen)
        return stolen
    finally:
        os.close(pidfd)


def read_proc(name: str) -> int:
    with open(f"/proc/{name}", "rb") as handle:
        return len(handle.read(4096))


def scan(pid_max: int) -> None:
    """kill(pid, 0) on every pid of the range (a child of its own alive meanwhile): what is not ESRCH."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    found: dict[str, str | None] = {}
    for pid in range(1, pid_max + 1):
        try:
            os.kill(pid, 0)
            found[str(pid)] = None
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                found[str(pid)] = errno_name(exc.errno or 0)
    os.close(write_end)
    os.waitpid(child, 0)
    report("pidns.scan", found=found, child=child, scanned=pid_max)


def host_targets(targets: dict[str, int]) -> None:
    """The host's processes by the pid the host gave them: the launcher, the doors, the app's own init."""
    for name, pid in sorted(targets.items()):
        attempt(f"pidns.kill0.{name}", lambda pid=pid: os.kill(pid, 0), target=pid)
        attempt(f"pidns.pidfd_open.{name}", lambda pid=pid: open_pidfd(pid), target=pid)


def own_init() -> None:
    """Pid 1, its init (the app's uid, another Landlock domain, not dumpable): reachable by number only."""
    attempt("init.kill_sigkill", lambda: os.kill(1, signal.SIGKILL))
    attempt("init.kill_sigterm", lambda: os.kill(1, signal.SIGTERM))
    attempt("init.pidfd_open", lambda: open_pidfd(1))
    attempt("init.pidfd_sigkill", lambda: signal_by_pidfd(1, signal.SIGKILL))
    attempt("init.pidfd_getfd", lambda: steal_fd(1, 0))
    attempt("init.proc_status", lambda: read_proc("1/status"))


def proc_files() -> None:
    report("proc.listing", entries=sorted(os.listdir("/proc")))
    for name in GLOBAL_FILES:
        attempt(f"proc.{name}", lambda name=name: read_proc(name))
    attempt("control.proc_self_status", lambda: read_proc("self/status"))


def identity() -> dict[str, object]:
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status.read().splitlines() if ":" in line)
    return {"pid": os.getpid(), "ppid": os.getppid(), "nspid": fields["NSpid"].split()}


def outside(targets: dict[str, int]) -> None:
    """As the app's uid in the host's pid namespace: the same targeted attempts, nothing else."""
    host_targets(targets)
    for name in GLOBAL_FILES[:2]:
        attempt(f"proc.{name}", lambda name=name: read_proc(name))


def main() -> int:
    if sys.argv[1:2] == ["outside"]:
        outside(json.loads(sys.argv[2]))
        return 0
    report("ready", sid=os.environ["SHARNESS_SESSION"], tty=os.isatty(0), **identity())
    targets = json.loads(sys.stdin.readline())
    host_targets(targets["pids"])
    scan(int(targets["pid_max"]))
    own_init()
    proc_files()
    report("done")
    report("end", line=sys.stdin.readline().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
