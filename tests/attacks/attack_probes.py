"""What every attack script run as the app shares: one JSON line per attempt, the errno it failed with, raw
syscalls by number, and small openers. Standard library and ctypes only: it runs inside the confinement."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import socket
import subprocess
from collections.abc import Callable

LIBC = ctypes.CDLL(None, use_errno=True)
# x86_64 syscall numbers (the suite runs on x86_64; an x32 call is how the bad-arch action is reached)
NR = {"process_vm_readv": 310, "perf_event_open": 298, "bpf": 321, "keyctl": 250, "add_key": 248,
      "fsopen": 430, "open_tree": 428, "open_by_handle_at": 304, "name_to_handle_at": 303, "userfaultfd": 323,
      "kcmp": 312, "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424, "clone": 56,
      "setns": 308, "ptrace": 101, "getpid": 39}


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
    report(probe, errno=None, result=result if isinstance(result, (int, str, bool, list)) else None, **extra)


def syscall(name: str, *args: object) -> Callable[[], int]:
    def call() -> int:
        converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
        result = LIBC.syscall(ctypes.c_long(NR[name] if name in NR else int(name)), *converted)
        if result == -1:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        return int(result)

    return call


def in_child(action: Callable[[], int]) -> dict[str, object]:
    """Run `action` in a forked child; its exit code or the signal that killed it."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(action())
        except BaseException:  # the child reports through its exit code only
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"signal": signal.Signals(os.WTERMSIG(status)).name}
    return {"exit": os.WEXITSTATUS(status)}


def connect_unix(path: str | bytes) -> Callable[[], str]:
    def connect() -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
        return "connected"

    return connect


def open_read(path: str) -> Callable[[], str]:
    def opened() -> str:
        os.close(os.open(path, os.O_RDONLY))
        return "opened"

    return opened


def open_write(path: str) -> Callable[[], str]:
    def opened() -> str:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
        return "opened"

    return opened


def run_status(argv: list[str], pass_fds: tuple[int, ...] = ()) -> dict[str, object]:
    """exec argv: what ran and how it ended, or the errno execve gave."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, pass_fds=pass_fds)
    except OSError as exc:
        return {"errno": errno_name(exc.errno or 0)}
    return {"errno": None, "exit": done.returncode, "stdout": done.stdout.strip()[:200],
            "stderr": done.stderr.strip()[-200:]}
