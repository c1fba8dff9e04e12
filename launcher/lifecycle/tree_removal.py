"""Remove a directory tree whatever its owner built in it: iterative, through directory fds, never following
a link, with a bounded number of fds open however deep the tree goes.

The app owns its private directory and TMPDIR, so what teardown finds there is the app's choice: a chain of
thousands of levels (recursion and one fd per level both fail on that), symlinks to /etc, directories it
made 000, entries swapped while we walk. Each level is opened with O_NOFOLLOW | O_DIRECTORY relative to its
parent's fd; only the first FD_LEVELS levels keep their fd, deeper ones are reached again through ".." and
checked to be the very directory (device and inode) we came down through.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass

FD_LEVELS = 16  # levels that keep their fd and directory stream open (two fds each)
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# linux/fs.h: FS_IOC_GETFLAGS/SETFLAGS (_IOR/_IOW('f', 1/2, long)); the kernel reads and writes an int.
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FS_IMMUTABLE_FL, FS_APPEND_FL = 0x00000010, 0x00000020


class TreeRemovalError(OSError):
    """A tree could not be removed; the message names the entry and why (what was removed stays removed)."""


@dataclass
class _Level:
    """One directory on the way down: its name in its parent, its identity, and (near the top) its fd."""

    name: str
    ident: tuple[int, int]  # (st_dev, st_ino)
    fd: int | None
    entries: Iterator[os.DirEntry[str]] | None = None

    def close(self) -> None:
        if self.entries is not None:
            with contextlib.suppress(OSError):
                self.entries.close()  # type: ignore[attr-defined]  # os.scandir's iterator
            self.entries = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _clear_flags(fd: int) -> bool:
    """Drop the immutable and append-only attributes of an open file or directory; True if any was set."""
    try:
        raw = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
        flags = struct.unpack("=i", raw[:4])[0]
        if not flags & (FS_IMMUTABLE_FL | FS_APPEND_FL):
            return False
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("=i4x", flags & ~(FS_IMMUTABLE_FL | FS_APPEND_FL)))
    except OSError:
        return False  # a file system without attributes, or no CAP_LINUX_IMMUTABLE: the caller reports
    return True


def _clear_entry_flags(dir_fd: int, name: str) -> None:
    """The attributes of a regular file or directory `name` (opening anything else could act on a device)."""
    try:
        if stat.S_IFMT(os.lstat(name, dir_fd=dir_fd).st_mode) not in (stat.S_IFREG, stat.S_IFDIR):
            return
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return
    try:
        if stat.S_IFMT(os.fstat(fd).st_mode) in (stat.S_IFREG, stat.S_IFDIR):
            _clear_flags(fd)
    finally:
        os.close(fd)


def _remove_entry(dir_fd: int, name: str, *, is_dir: bool) -> None:
    """unlink or rmdir `name`; on EPERM clear the attributes that forbid it (its own, its directory's) once."""
    remove = os.rmdir if is_dir else os.unlink
    for attempt in (1, 2):
        try:
            remove(name, dir_fd=dir_fd)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EPERM or attempt == 2:
                raise TreeRemovalError(exc.errno, f"cannot remove {name!r}: {exc.strerror}") from None
        _clear_flags(dir_fd)
        _clear_entry_flags(dir_fd, name)


def _open_child(level: _Level, name: str, dev: int) -> _Level | None:
    """The subdirectory `name` of `level` as a new level; None when it is gone or no longer a directory."""
    assert level.fd is not None
    try:
        fd = os.open(name, OPEN_DIR, dir_fd=level.fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            _remove_entry(level.fd, name, is_dir=False)  # swapped for a link or a file meanwhile: unlink it
            return None
        raise TreeRemovalError(exc.errno, f"cannot open {name!r}: {exc.strerror}") from None
    ident = _ident(os.fstat(fd))
    if ident[0] != dev:
        os.close(fd)
        raise TreeRemovalError(errno.EXDEV, f"{name!r} is a mount point: not crossing it")
    return _Level(name, ident, fd)


def _next_subdir(level: _Level) -> str | None:
    """Unlink every non-directory of `level` until a subdirectory turns up; its name, or None when empty."""
    assert level.fd is not None
    if level.entries is None:
        level.entries = os.scandir(level.fd)
    for entry in level.entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if is_dir:
            return entry.name
        _remove_entry(level.fd, entry.name, is_dir=False)
    level.entries.close()  # type: ignore[attr-defined]
    level.entries = None
    return None


def _reopen_parent(levels: list[_Level]) -> None:
    """Give the parent of the deepest level its fd back, through "..", checked to be the same directory."""
    child, parent = levels[-1], levels[-2]
    if parent.fd is not None:
        return
    assert child.fd is not None
    fd = os.open("..", OPEN_DIR, dir_fd=child.fd)
    if _ident(os.fstat(fd)) != parent.ident:
        os.close(fd)
        raise TreeRemovalError(errno.ESTALE, f"{child.name!r} was moved while the tree was being removed")
    parent.fd = fd


def _where(levels: list[_Level]) -> str:
    """Where in the tree a failure happened, short enough to read when the tree is thousands deep."""
    names = [level.name for level in levels]
    if len(names) > 4:
        names = [names[0], f"...({len(names) - 3} levels)...", *names[-2:]]
    return "/".join(names) or "."


def remove_tree(parent_fd: int, name: str) -> None:
    """Remove the directory `name` in `parent_fd` and everything beneath it, links unlinked, never followed."""
    try:
        fd = os.open(name, OPEN_DIR, dir_fd=parent_fd)
    except FileNotFoundError:
        return
    top = _Level(name, _ident(os.fstat(fd)), fd)
    levels = [top]
    try:
        while levels:
            _step(levels, parent_fd, top.ident[0])
    except TreeRemovalError as exc:
        raise TreeRemovalError(exc.errno, f"in {_where(levels)}: {exc.strerror}") from None
    finally:
        for level in levels:
            level.close()


def _step(levels: list[_Level], parent_fd: int, dev: int) -> None:
    """Go down into the next subdirectory of the deepest level, or remove that level once it is empty."""
    level = levels[-1]
    sub = _next_subdir(level)
    if sub is not None:
        child = _open_child(level, sub, dev)
        if child is not None:
            if len(levels) > FD_LEVELS:
                level.close()  # reached again through the child's ".."
            levels.append(child)
        return
    if len(levels) > 1:
        _reopen_parent(levels)
    level.close()
    levels.pop()
    holder = levels[-1].fd if levels else parent_fd
    assert holder is not None
    _remove_entry(holder, level.name, is_dir=True)
