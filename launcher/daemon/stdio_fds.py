"""Which fds a caller may hand the daemon as the app's stdin, stdout and stderr.

What the launcher does with them is what it does with its own 0, 1, 2: read 0, write 1 and 2, and, where one
is a terminal, relay it through a pty and set its modes. So only what a person's stdio can be is accepted: a
terminal or another character device, a pipe, a regular file, or a connected stream socket, open the right way
round. A directory, an O_PATH handle, an anonymous inode (eventfd, pidfd, epoll, signalfd, timerfd), a block
device or a listening or datagram socket is refused: none is stdio, and each would give a root process an
object it has no business holding for the caller.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
from dataclasses import dataclass

NAMES = ("stdin", "stdout", "stderr")


@dataclass(frozen=True)
class FdFacts:
    mode: int  # st_mode
    flags: int  # F_GETFL
    sock_type: int | None = None  # SO_TYPE, for a socket
    listening: bool = False  # SO_ACCEPTCONN, for a socket


def kind_refusal(target: int, facts: FdFacts) -> str | None:
    """Why the fd offered as `target` (0, 1 or 2) cannot be the app's; None when it can. Pure."""
    name = NAMES[target]
    kind = stat.S_IFMT(facts.mode)
    if facts.flags & os.O_PATH:
        return f"{name} is an O_PATH handle, not an open file"
    if kind in (stat.S_IFDIR, stat.S_IFBLK, stat.S_IFLNK) or kind == 0:
        what = {stat.S_IFDIR: "a directory", stat.S_IFBLK: "a block device", stat.S_IFLNK: "a symlink"}
        return f"{name} is {what.get(kind, 'an anonymous inode (eventfd, pidfd, epoll, …)')}, not stdio"
    if kind == stat.S_IFSOCK and (facts.sock_type != socket.SOCK_STREAM or facts.listening):
        return f"{name} is a {'listening' if facts.listening else 'datagram or packet'} socket, not a stream"
    access = facts.flags & os.O_ACCMODE
    if target == 0 and access == os.O_WRONLY:
        return f"{name} is open for writing only"
    if target != 0 and access == os.O_RDONLY:
        return f"{name} is open for reading only"
    return None


def facts_of(fd: int) -> FdFacts:
    """What the kernel says of an fd: its file type, its open flags and, for a socket, its type."""
    mode, flags = os.fstat(fd).st_mode, fcntl.fcntl(fd, fcntl.F_GETFL)
    if not stat.S_ISSOCK(mode):
        return FdFacts(mode, flags)
    probe = socket.socket(fileno=os.dup(fd))
    try:
        return FdFacts(mode, flags, probe.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE),
                       bool(probe.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)))
    finally:
        probe.close()


def stdio_refusal(fds: list[int]) -> str | None:
    """Why these fds cannot be the app's stdin, stdout and stderr (exactly three); None when they can."""
    if len(fds) != len(NAMES):
        return f"a run request carries exactly {len(NAMES)} fds (stdin, stdout, stderr), not {len(fds)}"
    for target, fd in enumerate(fds):
        refusal = kind_refusal(target, facts_of(fd))
        if refusal is not None:
            return refusal
    return None
