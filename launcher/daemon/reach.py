"""What the caller could do with each path, found out as the caller: a forked child takes the caller's groups,
gid and uid (all three of each: real, effective, saved) and then stats and access()es every path, so the
kernel's own DAC walk (every directory on the way, ACLs, a mount the caller cannot see past) decides, never
root's view. The child holds nothing of the daemon's: every other fd is closed before it drops to the caller.
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import time
from collections.abc import Iterable

from launcher.daemon.deputy import Caller, Reach

CHECK_TIMEOUT_S = 5.0  # a path on a hung network file system must not hold the daemon
_MAX_ANSWER_BYTES = 4 * 1024 * 1024
_CHILD_FD = 3


def _look(path: str) -> dict[str, object]:
    try:
        info = os.stat(path)
    except OSError as exc:
        return {"path": path, "exists": False, "error": exc.strerror or type(exc).__name__}
    return {"path": path, "exists": True, "is_dir": stat.S_ISDIR(info.st_mode), "owner": info.st_uid,
            "readable": os.access(path, os.R_OK), "searchable": os.access(path, os.X_OK)}


def _child(caller: Caller, paths: tuple[str, ...], answer: int) -> None:
    """In the forked child: become the caller, look, write the facts as JSON, exit. Never returns."""
    code = 1
    try:
        os.dup2(answer, _CHILD_FD)
        for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
            if fd > _CHILD_FD:
                os.closerange(fd, fd + 1)
        os.setgroups(sorted(caller.groups))
        os.setresgid(caller.gid, caller.gid, caller.gid)
        os.setresuid(caller.uid, caller.uid, caller.uid)
        if os.getuid() != caller.uid or os.geteuid() != caller.uid:
            raise PermissionError("the checker did not become the caller")
        data = json.dumps([_look(path) for path in paths]).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(_CHILD_FD, view):]
        code = 0
    finally:
        os._exit(code)


def caller_reach(caller: Caller, paths: Iterable[str]) -> dict[str, Reach]:
    """path → what the caller could do with it, as the caller; OSError when the checker fails or hangs."""
    wanted = tuple(dict.fromkeys(paths))
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(caller, wanted, write_end)
    os.close(write_end)
    try:
        raw = _read_all(read_end, time.monotonic() + CHECK_TIMEOUT_S)
    finally:
        os.close(read_end)
        _reap(pid)
    facts = [Reach(**fact) for fact in json.loads(raw)]
    if [fact.path for fact in facts] != list(wanted):
        raise OSError("the path checker answered for other paths than asked")
    return {fact.path: fact for fact in facts}


def _read_all(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise OSError(f"the path checker gave no answer within {CHECK_TIMEOUT_S:g} s")
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _MAX_ANSWER_BYTES:
            raise OSError("the path checker's answer is too large")
        chunks.append(chunk)


def _reap(pid: int) -> None:
    _, status = os.waitpid(pid, os.WNOHANG)
    if _ == 0:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise OSError(f"the path checker failed (wait status {status})")
