"""`app.home_seed`: read as root before anything is created, written by the app's own process into its HOME.

The rules (what is copied, how much) are launcher/policy/home_seed.py. Reading walks directory fds opened with
O_NOFOLLOW below one openat2 (no symlink, no magic link) of the seed, and checks each file's fd against the
entry it listed, so a swap between listing and opening is refused, not followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field

from launcher.kernel.confine import ConfinementError
from launcher.kernel.resolve import open_dir_no_symlinks
from launcher.lifecycle.preflight import PreflightError
from launcher.policy.home_seed import (
    ROW,
    HomeSeed,
    SeedBudget,
    SeedEntry,
    budget_problem,
    copied_mode,
    entry_problem,
)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_HINT = ("keep only the agent's own settings there (regular files and directories of one owner, no symlink), or "
         "drop app.home_seed")


@dataclass
class _Walk:
    """The entries read so far and what the budget still allows."""

    seed: str
    budget: SeedBudget
    owner: int
    device: int
    entries: list[SeedEntry] = field(default_factory=list)
    total_bytes: int = 0

    def refuse(self, relative: str, problem: str) -> PreflightError:
        where = f"{self.seed}/{relative}" if relative else self.seed
        return PreflightError(ROW, f"app.home_seed: {where} {problem}", _HINT)


def read_home_seed(seed: str, budget: SeedBudget, owner: int | None = None) -> HomeSeed:
    """Every directory and file under `seed`, read as root; PreflightError (row /app/home_seed) when one may not
    be copied, the whole exceeds `budget`, or (`owner` given: sharness-launchd's caller) the seed is not owner's."""
    try:
        root_fd = open_dir_no_symlinks(seed)
    except OSError as exc:
        raise PreflightError(ROW, f"app.home_seed: {seed} cannot be opened as a directory without following a "
                             f"symlink: {exc.strerror}", "name an existing directory by its real path") from exc
    try:
        info = os.fstat(root_fd)
        if owner is not None and info.st_uid != owner:  # swapped since the daemon's checker looked
            raise PreflightError(ROW, f"app.home_seed: {seed} is not the caller's (owner uid {info.st_uid})", _HINT)
        walk = _Walk(seed, budget, info.st_uid, info.st_dev)
        _read_dir(walk, root_fd, "")
    except OSError as exc:
        raise PreflightError(ROW, f"app.home_seed: {seed} cannot be read: {exc.strerror}", _HINT) from exc
    finally:
        os.close(root_fd)
    return HomeSeed(tuple(walk.entries))


def _read_dir(walk: _Walk, dir_fd: int, relative: str) -> None:
    for name in sorted(os.listdir(dir_fd)):
        path = f"{relative}/{name}" if relative else name
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        problem = entry_problem(info.st_mode, info.st_uid, walk.owner, info.st_dev, walk.device)
        size = info.st_size if stat.S_ISREG(info.st_mode) else 0
        problem = problem or budget_problem(walk.total_bytes + size, len(walk.entries) + 1, walk.budget,
                                            path.count("/") + stat.S_ISDIR(info.st_mode))
        if problem is not None:
            raise walk.refuse(path, problem)
        if stat.S_ISDIR(info.st_mode):
            walk.entries.append(SeedEntry(path, copied_mode(info.st_mode), None))
            child = _open_same(walk, dir_fd, name, path, info, _DIR_FLAGS)
            try:
                _read_dir(walk, child, path)
            finally:
                os.close(child)
        else:
            walk.entries.append(SeedEntry(path, copied_mode(info.st_mode), _read_file(walk, dir_fd, name, path, info)))


def _open_same(walk: _Walk, dir_fd: int, name: str, path: str, listed: os.stat_result, flags: int) -> int:
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise walk.refuse(path, f"cannot be opened without following a link: {exc.strerror}") from exc
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (listed.st_dev, listed.st_ino):
        os.close(fd)
        raise walk.refuse(path, "changed while it was being read")
    return fd


def _read_file(walk: _Walk, dir_fd: int, name: str, path: str, listed: os.stat_result) -> bytes:
    fd = _open_same(walk, dir_fd, name, path, listed, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    room = walk.budget.max_bytes - walk.total_bytes
    try:
        chunks, size = [], 0
        while size <= room and (chunk := os.read(fd, min(1 << 20, room + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > room:
        raise walk.refuse(path, f"makes the seed larger than {walk.budget.max_bytes} bytes")
    walk.total_bytes += size
    return b"".join(chunks)


def write_home_seed(seed: HomeSeed, home: str) -> None:
    """In the app's process, confined, before execve: create the seed's entries under `home` (its scratch tmpfs,
    fresh, so nothing there is a link). ConfinementError (step home_seed) when the tmpfs refuses."""
    try:
        _write(seed, home)
    except OSError as exc:
        raise ConfinementError("home_seed", f"copying app.home_seed into {home}: {exc.strerror} ({exc.filename})"
                               " (raise app.process.scratch_mb or scratch_inodes, or shrink the seed)") from exc


def _write(seed: HomeSeed, home: str) -> None:
    dirs = {"": os.open(home, _DIR_FLAGS)}
    try:
        for entry in seed.entries:
            parent, _, name = entry.path.rpartition("/")
            parent_fd = dirs[parent]
            if entry.data is None:
                with contextlib.suppress(FileExistsError):  # the XDG directories may be there already
                    os.mkdir(name, entry.mode, dir_fd=parent_fd)
                dirs[entry.path] = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
                os.chmod(dirs[entry.path], entry.mode)
                continue
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, entry.mode,
                         dir_fd=parent_fd)
            try:
                view = memoryview(entry.data)
                while view:
                    view = view[os.write(fd, view):]
                os.fchmod(fd, entry.mode)
            finally:
                os.close(fd)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            exc.strerror = "already exists in HOME"
        raise
    finally:
        for fd in dirs.values():
            os.close(fd)
