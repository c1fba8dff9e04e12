"""What the caller could do with each path, found out as the caller: a forked child takes the caller's groups,
gid and uid (all three of each: real, effective, saved) and then stats and access()es every path, so the
kernel's own DAC walk (every directory on the way, ACLs, a mount the caller cannot see past) decides, never
root's view. The child holds nothing of the daemon's: every other fd is closed before it drops to the caller.
"""

from __future__ import annotations

import contextlib
import json
import os
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


class ReachCheck:
    """One checker child at work, as the caller. The daemon's loop feeds it whenever its pipe is readable, so a
    path on a hung mount holds this request only, never the daemon (the deadline then refuses it)."""

    def __init__(self, caller: Caller, paths: Iterable[str]) -> None:
        self.wanted = tuple(dict.fromkeys(paths))
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(caller, self.wanted, write_end)
        os.close(write_end)
        os.set_blocking(read_end, False)
        self.fd, self.pid = read_end, pid
        self.deadline = time.monotonic() + CHECK_TIMEOUT_S
        self._chunks: list[bytes] = []
        self._size = 0
        self._ended = False
        self._status: int | None = None

    def feed(self) -> bool:
        """Read what the child wrote so far; True once it closed its end. OSError when the answer is too large."""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return False
            if not chunk:
                return True
            self._size += len(chunk)
            if self._size > _MAX_ANSWER_BYTES:
                raise OSError("the path checker's answer is too large")
            self._chunks.append(chunk)

    def result(self) -> dict[str, Reach]:
        """Once feed() said True: path → what the caller could do with it; OSError when the checker failed."""
        status = self.close(exited=True)
        if status is None or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            raise OSError(f"the path checker failed (wait status {status})")
        facts = [Reach(**fact) for fact in json.loads(b"".join(self._chunks))]
        if [fact.path for fact in facts] != list(self.wanted):
            raise OSError("the path checker answered for other paths than asked")
        return {fact.path: fact for fact in facts}

    def close(self, *, exited: bool = False) -> int | None:
        """Close the pipe and end the child (killed unless it exited); its wait status, or None when it is not
        reaped yet (a kill takes effect at its next killable wait: `reap_abandoned` reaps it later).
        `exited`: the child closed its end, which it does only by exiting: wait for that exit."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self._ended:
            return self._status
        self._ended = True
        pid, self._status = os.waitpid(self.pid, 0 if exited else os.WNOHANG)
        if pid == 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            pid, self._status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            _abandoned.add(self.pid)
            self._status = None
        return self._status


_abandoned: set[int] = set()  # killed checkers not reaped yet


def reap_abandoned() -> None:
    """Reap the killed checkers that have ended since (once per daemon round)."""
    for pid in list(_abandoned):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                continue
        _abandoned.discard(pid)
