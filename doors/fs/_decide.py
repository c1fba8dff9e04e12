"""One verdict per operation, from the rows, the session's usage and the facts found. Pure: no I/O.

A verdict is a Refusal naming the row, or None: the operation is allowed.
"""

from __future__ import annotations

from dataclasses import replace

from doors._refusal import Refusal
from doors.fs._paths import WorkspacePath
from doors.fs._rules import (
    DESTRUCTIVE,
    Facts,
    FsRows,
    Op,
    Usage,
    decide_names,
    prefix_in,
    prefix_of,
    refuse,
)
from doors.fs._version import version_conflict

FILE_MODE = 0o644
EXEC_MODE = 0o755
DIR_MODE = 0o755


def decide(
    op: Op,
    path: WorkspacePath,
    rows: FsRows,
    usage: Usage,
    facts: Facts,
    *,
    dest: WorkspacePath | None = None,
    want_exec: bool = False,
    role: str = "app",
) -> Refusal | None:
    """The whole verdict for `op` on `path`: names, real path, secrets, existence, version, size (the first
    refusal, in that order). Written out rather than as a table of lambdas: the mount decides twice a small file."""
    refusal = decide_names(op, path, rows, dest=dest, want_exec=want_exec, role=role)
    if refusal is None:
        refusal = _real_path(op, path, rows, facts, want_exec, role)
    if refusal is None:
        refusal = _secret(rows, facts)
    if refusal is None:
        refusal = _existence(op, path, rows, facts)
    if refusal is None:
        refusal = _exec_rename(op, path, dest, rows, facts)
    if refusal is None:
        refusal = _version(op, facts)
    if refusal is None:
        refusal = _size(op, rows, usage, facts)
    return refusal


def _real_path(op: Op, path: WorkspacePath, rows: FsRows, facts: Facts, want_exec: bool, role: str) -> Refusal | None:
    real = facts.real_path
    if real is None or real == path:
        return None
    refusal = decide_names(op, real, rows, want_exec=want_exec, role=role)
    if refusal is None:
        return None
    return replace(refusal, detail=f"{path} leads through a symlink to {real}: {refusal.detail}")


def _secret(rows: FsRows, facts: Facts) -> Refusal | None:
    if not rows.refuse_secrets or facts.secret is None:
        return None
    return refuse(
        403,
        "refuse_secrets",
        f"the content holds a {facts.secret}; nothing was written",
        "keep private keys and the session's kept secrets out of the workspace (the keys door holds secrets)",
    )


def _missing(path: WorkspacePath) -> Refusal:
    return refuse(404, "not_found", f"nothing at {path}", "check the path with list")


def _existence(op: Op, path: WorkspacePath, rows: FsRows, facts: Facts) -> Refusal | None:
    kind = facts.target.kind
    if op in (Op.READ, Op.STAT, Op.LIST, Op.DELETE, Op.RENAME) and kind is None:
        return _missing(path)
    if op is Op.READ and kind != "file":
        return refuse(409, "not_a_file", f"{path} is a {kind}, not a file", "list a directory instead of reading it")
    if op is Op.LIST and kind != "dir":
        return refuse(409, "not_a_directory", f"{path} is a {kind}, not a directory", "read or stat it instead")
    if op in (Op.WRITE, Op.APPEND) and kind not in (None, "file"):
        return refuse(409, "not_a_file", f"{path} is a {kind}; {op.value} needs a regular file", "choose another path")
    if op is Op.MKDIR and kind not in (None, "dir"):
        return refuse(409, "exists", f"{path} exists and is a {kind}", "choose another path")
    if op is Op.WRITE and kind is not None:
        folds = rows.casefold_dirs
        prefix = prefix_of(path, rows.append_only, folds) or prefix_of(facts.real_path or path, rows.append_only, folds)
        if prefix is not None:
            return refuse(
                403,
                "append_only",
                f"{path} is in append_only {prefix}: replacing it is refused",
                "append to it instead",
            )
    if op is Op.RENAME and facts.dest_target is not None and facts.dest_target.exists:
        return refuse(409, "exists", "the rename destination exists", "delete it first, or choose another name")
    return None


def _exec_rename(op: Op, path: WorkspacePath, dest: WorkspacePath | None, rows: FsRows, facts: Facts) -> Refusal | None:
    """A rename may not carry what an exec prefix allowed out of every exec prefix: an executable file from
    inside one, or a directory at, in or above one (the exec row would be laundered by a move)."""
    if op is not Op.RENAME or dest is None or prefix_of(dest, rows.exec, rows.casefold_dirs) is not None:
        return None
    source = facts.real_path or path
    inside = prefix_of(source, rows.exec, rows.casefold_dirs)
    if facts.target.kind == "file":
        prefix = inside if facts.target.executable else None
    else:
        prefix = inside or prefix_in(source, rows.exec, rows.casefold_dirs)
    if prefix is None:
        return None
    return refuse(
        403,
        "exec",
        f"renaming {path} to {dest} would take executables out of the exec prefix {prefix}",
        "rename it to a place inside doors.fs.exec, or write a copy without exec",
    )


def _version(op: Op, facts: Facts) -> Refusal | None:
    if op not in (Op.WRITE, Op.APPEND) and op not in DESTRUCTIVE:
        return None
    conflict = version_conflict(facts.if_match, facts.if_none_match, facts.target.etag)
    if conflict is None:
        return None
    return refuse(409, "version", conflict, "read the file again (GET or stat gives its etag) and retry")


def _size(op: Op, rows: FsRows, usage: Usage, facts: Facts) -> Refusal | None:
    creates = not facts.target.exists and op in (Op.WRITE, Op.APPEND, Op.MKDIR)
    if creates and usage.files_created + 1 > rows.max_files:
        return refuse(
            507,
            "max_files",
            f"this session has created {usage.files_created} files (max_files {rows.max_files})",
            "raise doors.fs.max_files in the manifest",
        )
    if op not in (Op.WRITE, Op.APPEND):
        return None
    final = facts.body_bytes + (facts.target.size if op is Op.APPEND else 0)
    return _bytes(rows, usage, final, facts.body_bytes)


def _bytes(rows: FsRows, usage: Usage, final: int, body: int) -> Refusal | None:
    if final > rows.max_file_bytes:
        return refuse(
            413,
            "max_file_bytes",
            f"the file would hold {final} bytes (max_file_bytes {rows.max_file_bytes})",
            "write less, or raise doors.fs.max_file_bytes in the manifest",
        )
    if usage.bytes_written + body > rows.max_total_bytes:
        left = max(0, rows.max_total_bytes - usage.bytes_written)
        return refuse(
            507,
            "max_total_bytes",
            f"{body} bytes asked, {left} left of this session's max_total_bytes {rows.max_total_bytes}",
            "raise doors.fs.max_total_bytes in the manifest",
        )
    return None


def file_mode(path: WorkspacePath, rows: FsRows, want_exec: bool, was_executable: bool) -> int:
    """The mode a written file ends with: never setuid/setgid; executable only inside an exec prefix."""
    allowed = prefix_of(path, rows.exec, rows.casefold_dirs) is not None
    return EXEC_MODE if allowed and (want_exec or was_executable) else FILE_MODE


def decide_upload_slot(rows: FsRows, open_uploads: int, role: str) -> Refusal | None:
    """Whether a client (role) may start one more body while `open_uploads` of its own are in flight."""
    if open_uploads < rows.max_concurrent_uploads:
        return None
    return refuse(
        429,
        "max_concurrent_uploads",
        f"the {role} has {open_uploads} uploads in flight (max_concurrent_uploads {rows.max_concurrent_uploads})",
        "finish or abort an upload first, or raise doors.fs.max_concurrent_uploads in the manifest",
    )


def decide_arriving(rows: FsRows, usage: Usage, received: int, more: int) -> Refusal | None:
    """The next `more` bytes of a body that has `received` so far, counted against max_total_bytes as they
    arrive; `usage` holds every reservation, this body's own and those of other bodies in flight."""
    if usage.bytes_written + more <= rows.max_total_bytes:
        return None
    left = max(0, rows.max_total_bytes - usage.bytes_written)
    return refuse(
        507,
        "max_total_bytes",
        f"the body reached {received + more} bytes with {left} left of this session's max_total_bytes "
        f"{rows.max_total_bytes} (bodies still arriving count)",
        "raise doors.fs.max_total_bytes in the manifest, or send fewer bodies at once",
    )


def precheck_size(op: Op, rows: FsRows, usage: Usage, declared: int | None) -> Refusal | None:
    """Refuse a declared Content-Length early, before any byte of the body is read."""
    if declared is None or op not in (Op.WRITE, Op.APPEND):
        return None
    return _bytes(rows, usage, declared, declared)
