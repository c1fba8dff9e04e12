"""Journal-before-create: every session resource is named on disk before it exists, and removed from there.

One JSON line per resource, appended and fsynced before the caller creates it (docs/contracts.md). The first
line names the owning launcher (`<pid>:<starttime>`), so `gc` can tell a dead session from a live one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from launcher.lifecycle.journal_removers import (
    RemovalRefused,
    Remover,
    check_path,
    parse_process,
    process_name,
    removers_for,
)
from launcher.lifecycle.tree_removal import remove_tree
from pki.vocabulary import REMOVABLE_ROOTS, SESSIONS_ROOT, valid_sid

KINDS = ("user", "group", "netns", "cgroup", "dir", "file", "svid", "pid")
# Removed before everything else: a key must not outlive a tree removal that fails (docs/contracts.md).
FIRST_KINDS = frozenset({"svid"})
JOURNAL_NAME = "journal"
STAGING_PREFIX = ".new-"
REMOVERS: Mapping[str, Remover] = removers_for(REMOVABLE_ROOTS)

__all__ = [
    "FIRST_KINDS",
    "JOURNAL_NAME",
    "KINDS",
    "REMOVERS",
    "STAGING_PREFIX",
    "Journal",
    "JournalEntry",
    "JournalError",
    "RemovalError",
    "RemovalRefused",
    "Remover",
    "encode_entry",
    "parse_journal",
    "process_name",
]



BUSY = "another process is tearing it down now"


def _make_staging(root: str, staging: str, attempts: int = 3) -> None:
    """The roots (made if missing), then `staging` inside: a sweep or the last session's end removes an empty
    root under its exclusive lock, which a session only takes once its journal exists; so the root may go
    between the two steps, and then they are done again."""
    for attempt in range(attempts):
        os.makedirs(os.path.dirname(os.path.dirname(root)), exist_ok=True)
        try:
            _ensure_dir(os.path.dirname(root), 0o711)
            _ensure_dir(root, 0o700)
            os.mkdir(staging, 0o700)
            return
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise


class JournalError(Exception):
    """The journal cannot be written or read as the contract says."""


@dataclass(frozen=True)
class JournalEntry:
    kind: str
    name: str


@dataclass(frozen=True)
class RemovalError:
    kind: str
    name: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.detail}"


# --- pure helpers -------------------------------------------------------------------------------------


def encode_entry(kind: str, name: str) -> bytes:
    """One journal line, newline included."""
    return json.dumps({"kind": kind, "name": name}, ensure_ascii=True).encode() + b"\n"


def parse_journal(data: bytes) -> tuple[str | None, list[JournalEntry]]:
    """(owner, resource entries) of a journal; a torn last line (a crash mid-append) is skipped."""
    lines = data.split(b"\n")
    owner: str | None = None
    entries: list[JournalEntry] = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            obj = json.loads(line)
            entry = JournalEntry(kind=obj["kind"], name=obj["name"])
            if not isinstance(entry.kind, str) or not isinstance(entry.name, str):
                raise TypeError("kind and name must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):  # unterminated last line: the append was torn, the resource never made
                continue
            raise JournalError(f"journal line {number} is not a journal entry ({exc})") from exc
        if entry.kind == "launcher" and number == 1:
            owner = entry.name
        else:
            entries.append(entry)
    return owner, entries


# --- the journal --------------------------------------------------------------------------------------


def _ensure_dir(path: str, mode: int) -> None:
    """mkdir with exactly `mode` (not masked by umask) unless it exists already."""
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        return
    os.chmod(path, mode)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _remove_staging(root: str, staging: str) -> None:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        remove_tree(root_fd, os.path.basename(staging))
    finally:
        os.close(root_fd)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Journal:
    """The on-disk list of what one session created; the launcher appends, teardown and gc remove."""

    def __init__(self, path: str, *, fd: int | None, allowed_roots: Sequence[str]) -> None:
        self.path = path
        self.directory = os.path.dirname(path)
        self.sid = os.path.basename(self.directory)
        self._fd = fd
        self._roots = tuple(allowed_roots)
        self._protected = (os.path.dirname(self.directory), SESSIONS_ROOT)

    @classmethod
    def create(
        cls, sid: str, root: str = SESSIONS_ROOT, *, allowed_roots: Sequence[str] = REMOVABLE_ROOTS
    ) -> Journal:
        """A new journal at `<root>/<sid>/journal` (dir 0700) whose first line names this launcher."""
        if not valid_sid(sid):
            raise JournalError(f"session id must be 8 lowercase hex characters, got {sid!r}")
        root = os.path.normpath(root)
        owner = process_name()
        final = os.path.join(root, sid)
        # Built under a staging name that carries the owner, then renamed: a session dir always has an owner.
        staging = os.path.join(root, f"{STAGING_PREFIX}{sid}-{owner.replace(':', '-')}")
        _make_staging(root, staging)
        fd = -1
        try:
            os.chmod(staging, 0o700)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(os.path.join(staging, JOURNAL_NAME), flags, 0o600)
            _write_all(fd, encode_entry("launcher", owner))
            os.fsync(fd)
            if os.path.lexists(final):
                raise FileExistsError(f"session {sid} already has a journal at {final}")
            os.rename(staging, final)
            _fsync_dir(root)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                _remove_staging(root, staging)
            raise
        return cls(os.path.join(final, JOURNAL_NAME), fd=fd, allowed_roots=allowed_roots)

    @classmethod
    def open(cls, path: str, *, allowed_roots: Sequence[str] = REMOVABLE_ROOTS) -> Journal:
        """An existing journal (of a dead session, for gc), read-only until teardown."""
        return cls(os.path.normpath(path), fd=None, allowed_roots=allowed_roots)

    def record(self, kind: str, name: str) -> None:
        """Append `{kind, name}` and fsync it; call BEFORE creating the resource."""
        self.record_all(((kind, name),))

    def record_all(self, entries: Sequence[tuple[str, str]]) -> None:
        """Append every `(kind, name)` with one fsync; call BEFORE creating any of them (each remover takes an
        absent resource as removed, so one named and never made is no leftover)."""
        if self._fd is None:
            raise JournalError(f"journal {self.path} is not open for recording")
        if not entries:
            return
        for kind, name in entries:
            self._check(kind, name)
        _write_all(self._fd, b"".join(encode_entry(kind, name) for kind, name in entries))
        os.fsync(self._fd)

    def _check(self, kind: str, name: str) -> None:
        if kind not in KINDS:
            raise JournalError(f"unknown journal kind {kind!r}: the kinds are {', '.join(KINDS)}")
        if not name or "\x00" in name:
            raise JournalError(f"journal {kind} name must be a non-empty string without NUL")
        try:
            if kind in ("dir", "file", "svid"):
                check_path(name, self._roots, self._protected)
            elif kind == "pid":
                parse_process(name)
        except RemovalRefused as exc:
            raise JournalError(f"not recording {kind} {name!r}: {exc}") from exc

    def owner(self) -> str | None:
        """`"<pid>:<starttime>"` of the launcher that created the session."""
        return self._read()[0]

    def entries(self) -> list[JournalEntry]:
        """The resources recorded, in creation order (empty once torn down)."""
        return self._read()[1]

    def _read(self) -> tuple[str | None, list[JournalEntry]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None, []
        with os.fdopen(fd, "rb") as f:
            return parse_journal(f.read())

    def close(self) -> None:
        """Stop recording (the journal stays on disk)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def teardown(
        self,
        errors: list[RemovalError],
        *,
        removers: Mapping[str, Remover] | None = None,
        removed: list[JournalEntry] | None = None,
    ) -> None:
        """Remove every entry in reverse order, then the journal and its dir; failures go to `errors`.

        A failing remover does not stop the others; the entries that failed stay in the journal for gc.
        """
        self.close()
        removers = removers_for(self._roots, self._protected) if removers is None else removers
        try:
            lock_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return  # torn down already
        try:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                errors.append(RemovalError("journal", self.path, BUSY))
                return
            try:
                owner, entries = self._read()
            except JournalError as exc:
                errors.append(RemovalError("journal", self.path, str(exc)))
                return
            failed = self._remove_all(entries, removers, errors, removed)
            self._finish(owner, failed)
        finally:
            os.close(lock_fd)

    @staticmethod
    def _remove_all(
        entries: list[JournalEntry],
        removers: Mapping[str, Remover],
        errors: list[RemovalError],
        removed: list[JournalEntry] | None,
    ) -> list[JournalEntry]:
        """Keys first, then everything else in reverse creation order; the entries that failed, in journal order."""
        order = sorted(reversed(range(len(entries))), key=lambda index: entries[index].kind not in FIRST_KINDS)
        failed: set[int] = set()
        for index in order:
            entry = entries[index]
            remover = removers.get(entry.kind)
            try:
                if remover is None:
                    raise JournalError(f"no remover for kind {entry.kind!r}")
                remover(entry.name)
            except Exception as exc:  # one resource's failure must not strand the others
                errors.append(RemovalError(entry.kind, entry.name, _describe(exc)))
                failed.add(index)
            else:
                if removed is not None:
                    removed.append(entry)
        return [entry for index, entry in enumerate(entries) if index in failed]

    def _finish(self, owner: str | None, failed: list[JournalEntry]) -> None:
        """Delete the journal and its dir, or keep only the entries that failed (for the next gc)."""
        if not failed:
            for leftover in (self.path, self.path + ".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
            # A sweep starting now may find this dir without its journal and remove it first (_collect_ownerless).
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(self.directory)
            _fsync_dir(os.path.dirname(self.directory))
            return
        lines = [encode_entry("launcher", owner)] if owner else []
        lines += [encode_entry(e.kind, e.name) for e in failed]
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            _write_all(fd, b"".join(lines))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, self.path)
        _fsync_dir(self.directory)
