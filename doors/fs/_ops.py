"""The workspace on disk: every path resolved by openat2 beneath one directory fd. Blocking calls.

Names are resolved with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS (and RESOLVE_NO_SYMLINKS when the rows
say so) from the workspace fd, so `..`, absolute symlinks and a symlink swapped in mid-request cannot lead
outside: the kernel refuses with EXDEV/ELOOP. Mutating ops resolve the parent directory and act on the last
name with *at calls that never follow it. Where a path really leads (after symlinks inside the workspace)
is read back from the fd, so the rows are judged on the real path too.
"""

from __future__ import annotations

import errno
import heapq
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from doors._refusal import DoorRefused, Refusal
from doors.fs._openat2 import (
    RENAME_NOREPLACE,
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    openat2,
    renameat2,
)
from doors.fs._paths import TEMP_PREFIX, TEMP_SUFFIX, WorkspacePath, is_temp_name
from doors.fs._rules import Target, refuse
from doors.fs._version import etag_of

_CLOEXEC = os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
# open(O_TMPFILE) where the file system has no tmpfile: EOPNOTSUPP; a kernel without O_TMPFILE: EISDIR.
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.EISDIR})


_KERNEL_ERRORS: dict[int, tuple[int, str, str]] = {
    errno.EXDEV: (403, "within_root", "openat2 RESOLVE_BENEATH refused: it resolves outside the workspace"),
    errno.ELOOP: (403, "within_root", "it goes through a symlink, which is refused here"),
    errno.ENOENT: (404, "not_found", "nothing is there (or a parent directory is missing)"),
    errno.ENOTDIR: (409, "not_a_directory", "a parent is not a directory"),
    errno.EISDIR: (409, "not_a_file", "it is a directory"),
    errno.ENOTEMPTY: (409, "not_empty", "the directory is not empty"),
    errno.EEXIST: (409, "exists", "something is already there"),
    errno.EACCES: (403, "permission", "the kernel refused access"),
    errno.EPERM: (403, "permission", "the kernel refused the operation"),
    errno.ENAMETOOLONG: (400, "path", "the name is too long for the file system"),
    errno.ENOSPC: (507, "disk", "the file system is full"),
    errno.EDQUOT: (507, "disk", "the disk quota is spent"),
    errno.EROFS: (403, "permission", "the file system is read-only"),
    errno.EINVAL: (409, "invalid", "the kernel refused it as invalid (a directory moved into itself?)"),
    errno.EBUSY: (409, "busy", "it is in use (a mount point?)"),
}
_HINTS = {
    "within_root": "name a path inside the workspace that does not go through a symlink leading out",
    "not_found": "check the path with list; create parent directories with mkdir",
    "permission": "the workspace's owner and modes must let the fs door write it",
}


def kernel_refusal(err: OSError, path: WorkspacePath) -> Refusal:
    """Translate the kernel's errno into a refusal naming the kernel."""
    status, row, what = _KERNEL_ERRORS.get(err.errno or 0, (500, "io", os.strerror(err.errno or 0)))
    return refuse(status, row, f"{path}: {what}", _HINTS.get(row, "see the door's README"), who="kernel")


def target_of(st: os.stat_result) -> Target:
    """The facts the rules need from a stat result."""
    mode = st.st_mode
    kind = "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"
    etag = etag_of(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if kind == "file" else None
    return Target(kind, st.st_size if kind == "file" else 0, etag, bool(mode & 0o111))


class PathBusy(Exception):
    """A path's lock is held elsewhere, and the caller asked not to wait for it (Workspace.lock, wait=False)."""

    def __init__(self, real: WorkspacePath) -> None:
        super().__init__(real.text)
        self.real = real


@dataclass
class Located:
    """A parent directory fd (O_PATH, caller closes), the last name, and what is there now."""

    parent_fd: int
    name: str
    real: WorkspacePath | None
    target: Target


@dataclass
class _PathLock:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class Workspace:
    """The workspace directory fd and the blocking operations on it."""

    def __init__(self, root_fd: int, *, no_symlinks: bool = False, chown_to: tuple[int, int] | None = None):
        self.root_fd = root_fd
        self._root_real = self._proc_path(root_fd)
        # Without /proc the door cannot tell where a symlink leads, so it refuses every symlink.
        self.no_symlinks = no_symlinks or self._root_real is None
        self.chown_to = chown_to
        # An unnamed file is linked through /proc/self/fd at commit: without /proc, bodies get named files.
        self._tmpfile = self._root_real is not None
        self._locks: dict[str, _PathLock] = {}
        self._locks_guard = threading.Lock()

    @property
    def resolve(self) -> int:
        flags = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
        return flags | RESOLVE_NO_SYMLINKS if self.no_symlinks else flags

    @staticmethod
    def _proc_path(fd: int) -> str | None:
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return link if link.startswith("/") else None

    def real_of(self, fd: int, path: WorkspacePath) -> WorkspacePath:
        """Where the open `fd` really is, relative to the workspace; refuse when that is unknowable."""
        link = self._proc_path(fd)
        # Read the root's place again: the person may have moved the workspace during the session.
        root = self._proc_path(self.root_fd) or self._root_real
        if link is None or root is None:
            return path
        if link == root:
            return WorkspacePath(())
        base = root.rstrip("/") + "/"
        if not link.startswith(base):
            raise DoorRefused(
                refuse(
                    403,
                    "within_root",
                    f"{path} resolves to a place outside the workspace",
                    _HINTS["within_root"],
                    who="kernel",
                )
            )
        return WorkspacePath(tuple(link[len(base) :].split("/")))

    def open(self, path: WorkspacePath, flags: int, mode: int = 0) -> int:
        """openat2 beneath the root; refusals raise DoorRefused naming the kernel."""
        try:
            return openat2(self.root_fd, path.text or ".", flags | _CLOEXEC, mode, self.resolve)
        except OSError as err:
            raise DoorRefused(kernel_refusal(err, path)) from err

    def locate(self, path: WorkspacePath) -> tuple[int, WorkspacePath | None, Target]:
        """Follow `path` beneath the root (O_PATH fd or -1 when absent), its real path, what is there."""
        try:
            fd = openat2(self.root_fd, path.text or ".", os.O_PATH | _CLOEXEC, 0, self.resolve)
        except OSError as err:
            if err.errno == errno.ENOENT:
                return -1, None, Target()
            raise DoorRefused(kernel_refusal(err, path)) from err
        try:
            return fd, self.real_of(fd, path), target_of(os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise

    def locate_parent(self, path: WorkspacePath) -> Located:
        """Resolve the parent directory; the last name is looked at, never followed."""
        parent_fd = self.open(path.parent, os.O_PATH | os.O_DIRECTORY)
        try:
            real_parent = self.real_of(parent_fd, path.parent)
            return Located(parent_fd, path.name, real_parent.child(path.name), self.stat_at(parent_fd, path.name))
        except BaseException:
            os.close(parent_fd)
            raise

    @staticmethod
    def stat_at(parent_fd: int, name: str) -> Target:
        """What is at `name` in the parent (a symlink is "other": writes never follow it)."""
        try:
            return target_of(os.stat(name, dir_fd=parent_fd, follow_symlinks=False))
        except FileNotFoundError:
            return Target()

    @contextmanager
    def lock(self, real: WorkspacePath, *, wait: bool = True) -> Iterator[None]:
        """Serialise door operations on one path (appends never interleave, checks stay true). `wait` False: raise
        PathBusy rather than wait for a holder (the trio thread: an HTTP write holds the lock in a worker thread
        while it queues its audit event through the trio thread)."""
        key = real.text
        with self._locks_guard:
            entry = self._locks.setdefault(key, _PathLock())
            entry.users += 1
        try:
            if not entry.lock.acquire(blocking=wait):
                raise PathBusy(real)
            try:
                yield
            finally:
                entry.lock.release()
        finally:
            with self._locks_guard:
                entry.users -= 1
                if entry.users == 0:
                    del self._locks[key]

    def wait_free(self, real: WorkspacePath) -> None:
        """Block until no one holds `real`'s lock (in a worker thread, for a caller that may not wait itself)."""
        with self.lock(real):
            pass

    def own(self, fd: int, mode: int) -> None:
        """Give a new file its mode (exactly: never setuid/setgid) and, if configured, its owner."""
        if self.chown_to is not None:
            os.fchown(fd, *self.chown_to)
        os.fchmod(fd, mode)

    def create_temp(self, parent_fd: int) -> tuple[int, str]:
        """A new file for a body, beside its target: unnamed (O_TMPFILE, name ""), so a door killed mid-upload
        leaves nothing; named (O_EXCL, never following a planted name) only where the file system has no
        O_TMPFILE, for `sweep_temp` to remove at the next start if the door dies first."""
        if self._tmpfile:
            try:
                return os.open(".", os.O_TMPFILE | os.O_WRONLY | _CLOEXEC, 0o600, dir_fd=parent_fd), ""
            except OSError as err:
                if err.errno not in _NO_TMPFILE:
                    raise
        return self._create_named_temp(parent_fd)

    @staticmethod
    def _create_named_temp(parent_fd: int) -> tuple[int, str]:
        for _ in range(8):
            name = f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"
            try:
                return os.open(name, _TEMP_FLAGS, 0o600, dir_fd=parent_fd), name
            except FileExistsError:
                continue
        raise DoorRefused(refuse(500, "io", "could not create a temporary file", "retry"))

    def commit_write(self, parent_fd: int, temp_fd: int, temp_name: str, name: str, mode: int,
                     durable: bool = True) -> Target:
        """fsync the temporary file, give it owner and mode, link an unnamed one under a temporary name, rename
        it over `name`, fsync the directory (`durable` False: no fsync, as a close() on a local file system)."""
        self.own(temp_fd, mode)
        if durable:
            os.fsync(temp_fd)
        linked = temp_name or self._link_temp(parent_fd, temp_fd)
        try:
            os.rename(linked, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except BaseException:
            if not temp_name:
                self.discard_temp(parent_fd, linked)
            raise
        if durable:
            self.sync_dir(parent_fd)
        return target_of(os.fstat(temp_fd))  # after the rename, which changes ctime and so the etag

    @staticmethod
    def _link_temp(parent_fd: int, temp_fd: int) -> str:
        """Give an O_TMPFILE file a temporary name (linkat of its /proc fd: no capability needed), for the
        atomic rename over the target; a name exists only between this and the rename."""
        for _ in range(8):
            name = f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"
            try:
                os.link(f"/proc/self/fd/{temp_fd}", name, dst_dir_fd=parent_fd, follow_symlinks=True)
                return name
            except FileExistsError:
                continue
        raise DoorRefused(refuse(500, "io", "could not link a temporary file", "retry"))

    @staticmethod
    def discard_temp(parent_fd: int, temp_name: str) -> None:
        """Remove a named temporary file that will not be committed (an unnamed one goes with its fd)."""
        if not temp_name:
            return
        with suppress(FileNotFoundError):
            os.unlink(temp_name, dir_fd=parent_fd)

    def sweep_temp(self) -> int:
        """Remove the door's temporary files (`.sh-fs-*.tmp`) that a killed door left anywhere in the
        workspace, not following symlinks nor crossing into other mounts; how many were removed."""
        removed = 0
        root_dev = os.fstat(self.root_fd).st_dev
        for _top, dirs, files, top_fd in os.fwalk(".", dir_fd=self.root_fd, follow_symlinks=False):
            dirs[:] = [name for name in dirs if _same_device(top_fd, name, root_dev)]
            for name in files:
                if is_temp_name(name) and _is_regular(top_fd, name):
                    with suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=top_fd)
                        removed += 1
        return removed

    @staticmethod
    def sync_dir(parent_fd: int) -> None:
        # An O_PATH fd cannot be fsynced: open the directory itself through it.
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC, dir_fd=parent_fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def open_append(self, parent_fd: int, name: str, create: bool) -> int:
        """Open `name` for appending (and reading its tail); the last name is never followed."""
        flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | _CLOEXEC
        fd = os.open(name, flags | (os.O_CREAT | os.O_EXCL if create else 0), 0o600, dir_fd=parent_fd)
        if create:
            try:
                self.own(fd, 0o644)
            except BaseException:
                os.close(fd)
                raise
        return fd

    @staticmethod
    def tail(fd: int, size: int, count: int) -> bytes:
        """The last `count` bytes of an open file of `size` bytes."""
        start = max(0, size - count)
        return os.pread(fd, size - start, start) if size > start else b""

    @staticmethod
    def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
        """One write per call where the kernel allows it; loop on short writes."""
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def mkdir(self, parent_fd: int, name: str, mode: int = 0o755) -> None:
        """mkdirat, then the exact mode whatever the umask; a setgid bit inherited from the parent stays
        (it is the owner's group-sharing choice, and only directories carry it)."""
        os.mkdir(name, 0o700, dir_fd=parent_fd)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=parent_fd)
        try:
            if self.chown_to is not None:
                os.fchown(fd, *self.chown_to)
            os.fchmod(fd, mode | (os.fstat(fd).st_mode & stat.S_ISGID))
        finally:
            os.close(fd)

    @staticmethod
    def delete(parent_fd: int, name: str, is_dir: bool) -> None:
        """unlinkat the name itself (a symlink is removed, never followed); directories must be empty."""
        if is_dir:
            os.rmdir(name, dir_fd=parent_fd)
        else:
            os.unlink(name, dir_fd=parent_fd)

    @staticmethod
    def rename(src: Located, dst: Located) -> None:
        """renameat2 with RENAME_NOREPLACE: an existing destination is an atomic 409."""
        renameat2(src.parent_fd, src.name, dst.parent_fd, dst.name, RENAME_NOREPLACE)

    def list_batch(self, dir_fd: int, after: str | None, limit: int) -> tuple[list[tuple[str, Target]], bool]:
        """The first `limit` entries, in name order, after the name `after`, of a directory (an O_PATH fd is
        fine), not following symlinks, without the door's temporary files; and whether more follow.

        Each call scans the directory anew and keeps only `limit` + 1 names: a listing holds one batch, never
        the whole directory."""
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC, dir_fd=dir_fd)
        try:
            with os.scandir(fd) as scan:
                wanted = (entry.name for entry in scan
                          if (after is None or entry.name > after) and not is_temp_name(entry.name))
                names = heapq.nsmallest(limit + 1, wanted)
            return [(name, self.stat_at(fd, name)) for name in names[:limit]], len(names) > limit
        finally:
            os.close(fd)

def _same_device(dir_fd: int, name: str, device: int) -> bool:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_dev == device
    except OSError:
        return False


def _is_regular(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
