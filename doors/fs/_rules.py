"""The fs door's rows, the records its decisions read, and the judgement of a path's names. Pure: no I/O.

`decide_names` judges an operation on its path names alone, before anything touches the disk: a Refusal
naming the row, or None when the names allow it. The facts the door then gathers (`Target`, `Usage`,
`Facts`: does the target exist, its size and version, what the body held, where the path really leads)
are judged by `doors.fs._decide.decide`, whose one verdict the dispatch audits and then acts on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from doors._refusal import Refusal
from doors.fs._paths import WHO, WorkspacePath, parse_prefix

if TYPE_CHECKING:
    from doors._secret_match import SecretMatcher


class Op(StrEnum):
    READ = "read"
    STAT = "stat"
    LIST = "list"
    WRITE = "write"
    APPEND = "append"
    MKDIR = "mkdir"
    DELETE = "delete"
    RENAME = "rename"


DEFAULT_MAX_CONCURRENT_UPLOADS = 8  # bodies one client may have in flight at once (launcher/manifest agrees)
MUTATING = frozenset({Op.WRITE, Op.APPEND, Op.MKDIR, Op.DELETE, Op.RENAME})
# Ops that remove or move what is at the path, and with it everything beneath it.
DESTRUCTIVE = frozenset({Op.DELETE, Op.RENAME})


def refuse(status: int, row: str, detail: str, hint: str, who: str = WHO) -> Refusal:
    """A refusal naming `row` (the fs door's, unless `who` says the kernel or the HTTP layer)."""
    return Refusal(status, row, who, detail, hint)


def _prefixes(raw: Any, key: str) -> tuple[WorkspacePath, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"fs row {key} must be a list of workspace-relative paths")
    return tuple(parse_prefix(item) for item in raw)


def _count(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"fs row {key} must be a non-negative integer")
    return value


@dataclass(frozen=True)
class FsRows:
    """The fs door's rows from the manifest (`doors.fs` in the manifest, `contract.rows` here)."""

    read_only: tuple[WorkspacePath, ...] = ()
    append_only: tuple[WorkspacePath, ...] = ()
    hidden: tuple[WorkspacePath, ...] = ()
    exec: tuple[WorkspacePath, ...] = ()
    refuse_secrets: bool = True
    no_symlinks: bool = False
    max_file_bytes: int = 10 * 1024 * 1024
    max_total_bytes: int = 1024 * 1024 * 1024
    max_files: int = 10_000
    max_concurrent_uploads: int = DEFAULT_MAX_CONCURRENT_UPLOADS
    # Directories, spelled as on the prefixes' paths, in which the file system looks names up folding case
    # (doors/fs/_casefold.py finds them at start): not a manifest row, a fact of the workspace's disk.
    casefold_dirs: frozenset[WorkspacePath] = frozenset()
    # The keys door's fingerprint of the kept secrets (the contract's, not a row): refuse_secrets finds them too.
    kept_secrets: SecretMatcher | None = field(default=None, compare=False)

    @classmethod
    def from_rows(cls, rows: Mapping[str, Any]) -> FsRows:
        """Build from the contract's rows; raise ValueError naming a malformed row."""
        for key in ("refuse_secrets", "no_symlinks"):
            if key in rows and not isinstance(rows[key], bool):
                raise ValueError(f"fs row {key} must be true or false")
        return cls(
            read_only=_prefixes(rows.get("read_only"), "read_only"),
            append_only=_prefixes(rows.get("append_only"), "append_only"),
            hidden=_prefixes(rows.get("hidden"), "hidden"),
            exec=_prefixes(rows.get("exec"), "exec"),
            refuse_secrets=rows.get("refuse_secrets", True),
            no_symlinks=rows.get("no_symlinks", False),
            max_file_bytes=_count(rows, "max_file_bytes", cls.max_file_bytes),
            max_total_bytes=_count(rows, "max_total_bytes", cls.max_total_bytes),
            max_files=_count(rows, "max_files", cls.max_files),
            max_concurrent_uploads=_count(rows, "max_concurrent_uploads", cls.max_concurrent_uploads),
        )

    def describe(self) -> dict[str, Any]:
        """The rows as JSON for `GET /v0/hello` and the README."""
        return {
            "within_root": True,
            "read_only": [p.text or "." for p in self.read_only],
            "append_only": [p.text or "." for p in self.append_only],
            "hidden": [p.text or "." for p in self.hidden],
            "exec": [p.text or "." for p in self.exec],
            "refuse_secrets": self.refuse_secrets,
            "no_symlinks": self.no_symlinks,
            "max_file_bytes": self.max_file_bytes,
            "max_total_bytes": self.max_total_bytes,
            "max_files": self.max_files,
            "max_concurrent_uploads": self.max_concurrent_uploads,
        }


def fold_name(name: str) -> str:
    """A name as a case-folding file system compares it: NFD, full case folding, NFD again (ext4's utf8
    casefold is NFD and case folding; vfat, ntfs3 and SMB fold less, so this folds at least as much)."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def _same_names(rule: WorkspacePath, other: WorkspacePath, length: int, folds: frozenset[WorkspacePath]) -> bool:
    """Whether the first `length` names of `other` lead where `rule`'s do: each compared the way the
    directory it is looked up in (on `rule`'s path) compares names."""
    for depth in range(length):
        want, got = rule.parts[depth], other.parts[depth]
        if want != got and not (WorkspacePath(rule.parts[:depth]) in folds and fold_name(want) == fold_name(got)):
            return False
    return True


Folds = frozenset[WorkspacePath]


def prefix_of(path: WorkspacePath, prefixes: Iterable[WorkspacePath], folds: Folds) -> WorkspacePath | None:
    """The prefix `path` is or lies beneath, names compared as the file system compares them."""
    for prefix in prefixes:  # a loop, not next() over a generator: most rows hold no prefix at all
        if len(path.parts) >= len(prefix.parts) and _same_names(prefix, path, len(prefix.parts), folds):
            return prefix
    return None


def prefix_in(path: WorkspacePath, prefixes: Iterable[WorkspacePath], folds: Folds) -> WorkspacePath | None:
    """A prefix strictly beneath `path`: moving or deleting `path` would take it along."""
    for prefix in prefixes:
        if len(prefix.parts) > len(path.parts) and _same_names(prefix, path, len(path.parts), folds):
            return prefix
    return None


def is_hidden(path: WorkspacePath, rows: FsRows) -> bool:
    """True when `path` lies in a hidden prefix (listings leave it out)."""
    return prefix_of(path, rows.hidden, rows.casefold_dirs) is not None


def _covering(op: Op, path: WorkspacePath, prefixes: tuple[WorkspacePath, ...], folds: Folds) -> WorkspacePath | None:
    """The prefix `path` lies in, or (for a destructive op) one lying in `path`: deleting a parent counts."""
    prefix = prefix_of(path, prefixes, folds)
    if prefix is None and op in DESTRUCTIVE:
        prefix = prefix_in(path, prefixes, folds)
    return prefix


def _hidden(op: Op, path: WorkspacePath, rows: FsRows, role: str) -> Refusal | None:
    prefix = _covering(op, path, rows.hidden, rows.casefold_dirs)
    if prefix is None:
        return None
    return refuse(
        403,
        "hidden",
        f"{path} is in hidden {prefix}: {op.value} refused",
        f"remove {prefix} from doors.fs.hidden in the manifest to let the {role} see it",
    )


def _read_only(op: Op, path: WorkspacePath, rows: FsRows) -> Refusal | None:
    if op not in MUTATING:
        return None
    prefix = _covering(op, path, rows.read_only, rows.casefold_dirs)
    if prefix is None:
        return None
    return refuse(
        403,
        "read_only",
        f"{path} is in read_only {prefix}: {op.value} refused",
        f"remove {prefix} from doors.fs.read_only in the manifest to allow it",
    )


def _append_only(op: Op, path: WorkspacePath, rows: FsRows) -> Refusal | None:
    if op not in DESTRUCTIVE:
        return None
    folds = rows.casefold_dirs
    prefix = prefix_of(path, rows.append_only, folds) or prefix_in(path, rows.append_only, folds)
    if prefix is None:
        return None
    return refuse(
        403,
        "append_only",
        f"{path} is in append_only {prefix}: {op.value} refused",
        f"append to it instead, or remove {prefix} from doors.fs.append_only in the manifest",
    )


def _root(op: Op, path: WorkspacePath) -> Refusal | None:
    if path.is_root and op in (Op.WRITE, Op.APPEND, Op.DELETE, Op.RENAME, Op.READ):
        return refuse(
            403,
            "within_root",
            f"{op.value} of the workspace root itself is refused",
            "name a path inside the workspace",
        )
    return None


def _exec(path: WorkspacePath, rows: FsRows, want_exec: bool) -> Refusal | None:
    if not want_exec or prefix_of(path, rows.exec, rows.casefold_dirs) is not None:
        return None
    return refuse(
        403,
        "exec",
        f"{path} may not be executable",
        "add its directory to doors.fs.exec in the manifest, or write it without exec",
    )


def decide_names(
    op: Op,
    path: WorkspacePath,
    rows: FsRows,
    *,
    dest: WorkspacePath | None = None,
    want_exec: bool = False,
    role: str = "app",
) -> Refusal | None:
    """Judge `op` on its path names alone: hidden, read_only, append_only, the root, exec; None allows it."""
    refusal = _root(op, path)
    if refusal is None:
        refusal = _hidden(op, path, rows, role)
    if refusal is None:
        refusal = _read_only(op, path, rows)
    if refusal is None:
        refusal = _append_only(op, path, rows)
    if refusal is None and op is Op.WRITE:
        refusal = _exec(path, rows, want_exec)
    if refusal is None and dest is not None:
        refusal = _decide_dest(dest, rows, role)
    return refusal


def _decide_dest(dest: WorkspacePath, rows: FsRows, role: str) -> Refusal | None:
    """A rename's destination: nothing may arrive in or above a protected prefix."""
    if dest.is_root:
        return refuse(403, "within_root", "rename onto the workspace root is refused", "name a path inside it")
    for row, prefixes in (
        ("hidden", rows.hidden),
        ("read_only", rows.read_only),
        ("append_only", rows.append_only),
    ):
        prefix = prefix_of(dest, prefixes, rows.casefold_dirs) or prefix_in(dest, prefixes, rows.casefold_dirs)
        if prefix is not None:
            return refuse(
                403,
                row,
                f"rename to {dest} would put files in {row} {prefix}",
                f"choose a destination outside {prefix}, or change doors.fs.{row} in the manifest",
            )
    return None


@dataclass(frozen=True)
class Target:
    """What the door found at a path: kind is "file", "dir", "other" or None when nothing is there."""

    kind: str | None = None
    size: int = 0
    etag: str | None = None
    executable: bool = False

    @property
    def exists(self) -> bool:
        return self.kind is not None


@dataclass(frozen=True)
class Usage:
    """What this session has written so far, including what is reserved: bodies as they arrive, and acts
    decided but not yet done."""

    bytes_written: int = 0
    files_created: int = 0


@dataclass(frozen=True)
class Facts:
    """Everything `decide` needs beyond the names: found by the I/O layer, judged here."""

    target: Target = field(default_factory=Target)
    real_path: WorkspacePath | None = None  # where the path really leads, when symlinks moved it
    body_bytes: int = 0
    secret: str | None = None  # what the secret scanner found, e.g. "PEM private key"
    if_match: str | None = None
    if_none_match: str | None = None
    dest_target: Target | None = None
