"""The overlay's upper layer as an ordered change list for the fs door. Pure: no I/O.

What overlayfs leaves in the upper layer (mounted `userxattr,redirect_dir=nofollow,metacopy=off`, so nothing
but plain files, directories, symlinks, whiteouts and one xattr), and what each means for the workspace:
- a regular file: created, or replaced (a lower file copied up holds all its data); any x bit asks for exec;
- a directory: made, or already there (a lower directory copied up because something beneath it changed);
- an opaque directory (`user.overlay.opaque`): the workspace's entry there is replaced by exactly what the
  upper directory holds (it was removed and made again, or a file became a directory);
- a whiteout (a 0/0 character device): the path was deleted (a directory with everything beneath it);
- a rename shows as what it did: a whiteout at the old name (when the lower had it) and a full copy at the
  new one; renaming a lower directory is EXDEV under `redirect_dir=nofollow`, so `mv` copies and deletes;
- a symlink or any other special file: refused (the fs door creates regular files and directories only).

Order: parents first; in each directory its deletions before its creations (a name freed before it is used),
files before subdirectories, names sorted. An entry whose stamp equals the one recorded when it was applied is
left out: applied changes leave the list even though they stay in the layer (docs/decisions/shell.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from doors.fs import MAX_DEPTH, MAX_PATH_BYTES  # the fs door's own limits: a path past them is never sent

KINDS = ("file", "dir", "symlink", "whiteout", "other")
Stamp = tuple[int, ...]


@dataclass(frozen=True)
class UpperEntry:
    """One entry of the upper layer as the door read it (lstat, never followed)."""

    names: tuple[str, ...]  # from the upper root, each a directory entry's name
    kind: str  # one of KINDS
    mode: int = 0o644  # permission bits
    opaque: bool = False  # a directory marked opaque
    size: int = 0
    stamp: Stamp = ()  # what says it changed: (ino, size, mtime_ns, ctime_ns, mode), the kind's own for others
    keep: tuple[str, ...] = ()  # an opaque directory's entries in the upper layer (whiteouts aside)

    @property
    def path(self) -> str:
        return "/".join(self.names)


@dataclass(frozen=True)
class Change:
    """One thing to do through the fs door: `op` on `path` (relative to the workspace)."""

    op: str  # "delete", "replace_dir" (opaque: keep only `keep` there), "mkdir", "write", or "refuse"
    path: str
    entry: UpperEntry
    executable: bool = False
    reason: str = ""  # op "refuse": why the door sends nothing


def _name_problem(name: str) -> str | None:
    if name in ("", ".", ".."):
        return f"the name {name!r} cannot be a directory entry"
    if "/" in name or "\0" in name:
        return "a name holds '/' or NUL"
    return None


def change_of(entry: UpperEntry) -> Change:
    """What one upper entry asks of the workspace (or why it is refused here)."""
    problem = next((p for p in map(_name_problem, entry.names) if p is not None), None)
    if problem is None and not entry.names:
        problem = "the upper layer's root is the workspace itself"
    if problem is None and len(entry.path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        problem = f"the path is longer than {MAX_PATH_BYTES} bytes, the fs door's limit"
    if problem is None and len(entry.names) > MAX_DEPTH:
        problem = f"the path is deeper than {MAX_DEPTH} levels, the fs door's limit (nothing beneath it is read)"
    if problem is None and entry.kind == "symlink":
        problem = "a symlink: the fs door writes regular files and directories only"
    if problem is None and entry.kind not in ("file", "dir", "whiteout"):
        problem = "a special file (fifo, socket or device): the fs door writes regular files and directories only"
    if problem is not None:
        return Change("refuse", entry.path, entry, reason=problem)
    if entry.kind == "whiteout":
        return Change("delete", entry.path, entry)
    if entry.kind == "dir":
        return Change("replace_dir" if entry.opaque else "mkdir", entry.path, entry)
    return Change("write", entry.path, entry, executable=bool(entry.mode & 0o111))


def _sort_key(entry: UpperEntry) -> tuple[tuple[int, str], ...]:
    # Per level: a deletion (0) before a file (1) before a directory (2); names sorted within each.
    rank = {"whiteout": 0, "dir": 2}.get(entry.kind, 1)
    parents = tuple((2, name) for name in entry.names[:-1])
    return (*parents, (rank, entry.names[-1] if entry.names else ""))


def change_list(entries: tuple[UpperEntry, ...], applied: Mapping[str, Stamp] | None = None) -> tuple[Change, ...]:
    """The ordered changes of the upper layer's `entries`, without those `applied` already (same path, same stamp).

    A directory already applied is still walked (its entries may have changed); it is not made again.
    """
    applied = applied or {}
    ordered = sorted(entries, key=_sort_key)
    return tuple(change_of(entry) for entry in ordered if applied.get(entry.path) != applied_stamp(entry))


def applied_stamp(entry: UpperEntry) -> Stamp:
    """What the ledger records for an applied entry: its kind (as its index in KINDS), its opacity, its stamp."""
    return (KINDS.index(entry.kind), int(entry.opaque), *entry.stamp)
