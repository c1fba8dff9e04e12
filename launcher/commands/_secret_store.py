"""The sealed store on disk: a root 0700 directory holding machine.key and one <name>.sealed file per secret.

Every file is root's, mode 0600, written whole under a temporary name and then renamed (a sealed file) or
linked (the machine key: two first uses at once keep one key, the other loads it), so a reader sees the old
file or the new one, never half of one. Nothing is per-session, so nothing is journaled.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from doors.keys import (
    KEY_HEADER_BYTES,
    MAX_SEALED_BYTES,
    MachineKey,
    SealedFileError,
    SealedHeader,
    check_sealed,
    key_id_of_header,
    machine_key_file,
    machine_key_of,
    sealed_file,
)
from launcher.commands import CommandError
from pki.vocabulary import EXIT_NO_INPUT, SEALED_SUFFIX

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


def _unusable(message: str, hint: str) -> CommandError:
    """The store (its directory or a file in it) cannot be used as it is: 66, what, and what to change."""
    return CommandError(EXIT_NO_INPUT, message, hint, error="store")


def _problem(info: os.stat_result, kind: str) -> str | None:
    wanted = stat.S_ISDIR if kind == "directory" else stat.S_ISREG
    if not wanted(info.st_mode):
        return f"is not a {kind}"
    if info.st_uid != 0:
        return f"is owned by uid {info.st_uid}, not root"
    if info.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(info.st_mode):04o}: group or others may reach it"
    return None


def ensure_store(root: str) -> None:
    """Create the store's directory (root 0700) when it is missing; CommandError (66) when it is not one to trust."""
    with contextlib.suppress(FileExistsError):
        os.makedirs(os.path.dirname(root), mode=0o755, exist_ok=True)
        os.mkdir(root, 0o700)
    info = os.lstat(root)
    problem = "is a symlink" if stat.S_ISLNK(info.st_mode) else _problem(info, "directory")
    if problem is not None:
        raise _unusable(f"the sealed store {root} {problem}", f"chown root:root {root} && chmod 0700 {root}")


def read_file(path: str, limit: int) -> bytes:
    """A store file's content, at most `limit` bytes (one more is read, to see a longer file)."""
    fd = os.open(path, _READ)
    try:
        problem = _problem(os.fstat(fd), "regular file")
        if problem is not None:
            raise _unusable(f"{path} {problem}", f"chown root:root {path} && chmod 0600 {path}")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _fsync_dir(root: str) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _temporary(root: str, data: bytes) -> Iterator[str]:
    """A fully written, fsynced root 0600 file under a fresh name in `root`; removed if it is still there after."""
    path = f"{root}/.tmp-{secrets.token_hex(8)}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchown(fd, 0, 0)
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def machine_key(root: str) -> MachineKey:
    """The store's machine key, made (and kept) on first use."""
    path = machine_key_file(root)
    try:
        data = read_file(path, KEY_HEADER_BYTES + 256)
    except FileNotFoundError:
        # link, not rename: when another first use won, its key is the one kept
        with _temporary(root, MachineKey.generate().file_bytes()) as written, contextlib.suppress(FileExistsError):
            os.link(written, path)
        _fsync_dir(root)
        data = read_file(path, KEY_HEADER_BYTES + 256)
    try:
        return machine_key_of(data)
    except SealedFileError as exc:
        raise _unusable(f"the machine key {path}: {exc}", "restore it from a backup; without it no sealed "
                         "secret opens (remove it and every .sealed file to start again)") from None


def machine_key_id(root: str) -> str | None:
    """The machine key's id, read from its header only (none of the key); None when there is no key yet."""
    path = machine_key_file(root)
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        return None
    try:
        return key_id_of_header(os.pread(fd, KEY_HEADER_BYTES, 0))
    except SealedFileError as exc:
        raise _unusable(f"the machine key {path}: {exc}", "restore it from a backup") from None
    finally:
        os.close(fd)


def write_sealed(root: str, name: str, data: bytes, *, replace: bool) -> str:
    """Put a sealed file's content in place for `name` (atomically); FileExistsError when kept and not `replace`."""
    path = sealed_file(root, name)
    with _temporary(root, data) as written:
        if replace:
            os.rename(written, path)
        else:
            os.link(written, path)  # EEXIST rather than a silent replacement
    _fsync_dir(root)
    return path


def remove_sealed(root: str, name: str) -> str:
    """Remove `name`'s sealed file; FileNotFoundError when there is none."""
    path = sealed_file(root, name)
    os.unlink(path)
    _fsync_dir(root)
    return path


@dataclass(frozen=True)
class Entry:
    """One sealed file as `secret list` shows it: its header, or why it cannot be trusted."""

    name: str
    path: str
    header: SealedHeader | None
    problem: str | None


def entries(root: str) -> list[Entry]:
    """Every <name>.sealed file in the store, checked without the key (header, length, name, key id)."""
    try:
        names = sorted(entry[:-len(SEALED_SUFFIX)] for entry in os.listdir(root) if entry.endswith(SEALED_SUFFIX))
    except FileNotFoundError:
        return []
    key_id = machine_key_id(root) or "(no machine key)"
    found = []
    for name in names:
        path = sealed_file(root, name)
        try:
            found.append(Entry(name, path, check_sealed(read_file(path, MAX_SEALED_BYTES), name, key_id), None))
        except SealedFileError as exc:
            found.append(Entry(name, path, None, str(exc)))
        except CommandError as exc:
            found.append(Entry(name, path, None, exc.message))
        except OSError as exc:
            found.append(Entry(name, path, None, os.strerror(exc.errno or errno.EIO)))
    return found
