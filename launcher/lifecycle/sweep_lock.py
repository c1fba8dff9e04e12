"""One lock orders the journal-less sweep against creation: flock(2) on the sessions root directory itself.

A session holds it shared while it creates its resources (its journal already exists); the sweep holds it
exclusive from listing the journals to removing what no journal names. So every `sh-<sid>-…` thing the sweep's
scan can see belongs to a session whose journal was there when it listed. Without it, a session created
between the listing and the scan lost its accounts and cgroups, and its app was killed (issue 19.7).
The directory, not a file in it: a lock file would outlive the last session (nothing left behind).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator


def _open_dir(root: str) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)


def _same_dir(fd: int, root: str) -> bool:
    """Still the directory at `root`: not removed (and perhaps re-made) between the open and the lock."""
    try:
        at_path = os.stat(root, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (at_path.st_dev, at_path.st_ino)


def _make_root(root: str) -> None:
    """The sessions root as ensure_root_dirs makes it (its parent traversable, itself root's alone)."""
    os.makedirs(os.path.dirname(root), mode=0o711, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(root, 0o700)


@contextlib.contextmanager
def creating(root: str) -> Iterator[None]:
    """Held shared while a session whose journal is under `root` creates what it journals."""
    fd = _open_dir(root)  # the session's journal is in it: nobody can remove it meanwhile
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def sweeping(root: str, *, wait: bool) -> Iterator[bool]:
    """Held exclusive, yielding True; yields False when `wait` is off and a session is creating right now."""
    while True:
        _make_root(root)
        fd = _open_dir(root)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            yield False
            return
        if _same_dir(fd, root):
            break
        os.close(fd)  # removed by the last session's teardown while we waited: lock the one there now
    try:
        yield True
    finally:
        remove_if_empty(root)  # made to be locked: with no session in it, it goes (nothing left behind)
        os.close(fd)


def remove_if_empty(root: str, parent: str | None = None) -> None:
    """rmdir the sessions root, then its parent (`parent`, default the directory holding it), while they are
    empty; call it holding the root exclusive, so no session is creating under it."""
    for path in (root, parent or os.path.dirname(root)):
        try:
            os.rmdir(path)
        except OSError:
            return  # not empty: a session's journal, or another session's runtime directory


def try_exclusive(root: str) -> int | None:
    """An fd holding `root` exclusive now, or None (it is gone, or someone creates or sweeps)."""
    try:
        fd = _open_dir(root)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
