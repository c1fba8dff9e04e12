"""Read the overlay's upper layer (the launcher shows it read-only to the door): its entries, and a file's bytes.

The layer is written by the commands, so it is hostile input: it is walked by fds, never through a symlink
(each directory opened O_NOFOLLOW beneath its parent's fd, each entry lstat'ed), a file is read through
openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS from the layer's root and must still be the inode that was
listed, and nothing deeper or longer than the fs door's path limits is descended into (the recursion and the
fds it holds open are bounded by them).
"""

from __future__ import annotations

import errno
import os
import stat

from doors.fs import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2
from doors.shell._changes import MAX_DEPTH, MAX_PATH_BYTES, UpperEntry

OPAQUE_XATTR = "user.overlay.opaque"  # userxattr: the shell's user may read it (trusted.* it may not)
RESOLVE_NO_SYMLINKS = 0x04
READ_PIECE = 1 << 20


class UpperChanged(OSError):
    """The file at a path is no longer the one listed (a command replaced it meanwhile)."""


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISCHR(mode) and info.st_rdev == 0:
        return "whiteout"
    return "other"


def _stamp(kind: str, info: os.stat_result) -> tuple[int, ...]:
    if kind == "file":
        return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, stat.S_IMODE(info.st_mode))
    if kind == "dir":  # its ctime moves with every entry made in it: the entries say what changed
        return (info.st_ino,)
    return (info.st_ino, info.st_ctime_ns)


def _opaque(dir_fd: int) -> bool:
    try:
        return os.getxattr(dir_fd, OPAQUE_XATTR) == b"y"
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP):
            return False
        raise


def _too_long(names: tuple[str, ...]) -> bool:
    return len("/".join(names).encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES


def _walk(dir_fd: int, names: tuple[str, ...], out: list[UpperEntry]) -> tuple[str, ...]:
    """Append the entries beneath `dir_fd` to `out`; return the names it holds that are not whiteouts."""
    kept: list[str] = []
    with os.scandir(dir_fd) as listing:
        found = sorted((entry.name, entry.stat(follow_symlinks=False)) for entry in listing)
    for name, info in found:
        kind, path = _kind(info), (*names, name)
        if kind != "whiteout":
            kept.append(name)
        if kind != "dir" or _too_long(path) or len(path) > MAX_DEPTH:  # the core refuses it: bounded recursion
            out.append(UpperEntry(path, kind, stat.S_IMODE(info.st_mode), size=info.st_size, stamp=_stamp(kind, info)))
            continue
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            index = len(out)
            out.append(UpperEntry(path, kind))  # its place, parents first; filled in once its entries are known
            keep = _walk(child, path, out)
            opaque = _opaque(child)
            out[index] = UpperEntry(path, kind, stat.S_IMODE(info.st_mode), opaque, stamp=_stamp(kind, info),
                                    keep=keep if opaque else ())
        finally:
            os.close(child)
    return tuple(kept)


def read_entries(root_fd: int) -> tuple[UpperEntry, ...]:
    """Every entry of the upper layer beneath `root_fd`, parents before children."""
    out: list[UpperEntry] = []
    _walk(root_fd, (), out)
    return tuple(out)


def read_file(root_fd: int, entry: UpperEntry, max_bytes: int) -> bytes | None:
    """The bytes of `entry` (a file), or None when it holds more than `max_bytes`; UpperChanged when the path
    now names another inode than the one listed."""
    fd = openat2(root_fd, entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0,
                 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (entry.stamp and info.st_ino != entry.stamp[0]):
            raise UpperChanged(errno.ESTALE, f"{entry.path} changed while the upper layer was read")
        pieces, total = [], 0
        while piece := os.read(fd, READ_PIECE):
            total += len(piece)
            if total > max_bytes:
                return None
            pieces.append(piece)
        return b"".join(pieces)
    finally:
        os.close(fd)
