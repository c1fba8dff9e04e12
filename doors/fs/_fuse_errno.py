"""The errno a program gets through the mount for each refusal the fs door's rules give. Pure: no I/O.

One table for every row, so the mount and the HTTP API refuse the same things for the same reasons and the
conformance vectors (doors/fs/vectors) can check both front ends: the HTTP API answers with a status and the
row, the mount with the row's errno (and the same audit event, naming the row).
"""

from __future__ import annotations

import errno

from doors._refusal import Refusal

# row → errno. Rows that refuse an operation whatever the permissions (append-only, exec, links) say EPERM, as
# the kernel does for chattr +a files; rows that refuse access say EACCES; the session's quotas say what a full
# quota or a full file system says.
ROW_ERRNO: dict[str, int] = {
    "within_root": errno.EACCES,
    "read_only": errno.EACCES,
    "hidden": errno.EACCES,  # creating or touching a hidden name; looking one up finds nothing (ENOENT)
    "append_only": errno.EPERM,
    "exec": errno.EPERM,
    "workspace": errno.EPERM,  # chown: every file stays the workspace owner's
    "file_kinds": errno.EPERM,  # the mount makes files and directories only: no hard link, symlink, device, FIFO
    "refuse_secrets": errno.EACCES,
    "max_file_bytes": errno.EFBIG,
    "max_total_bytes": errno.EDQUOT,
    "max_files": errno.ENOSPC,  # as a file system out of inodes (the app's scratch tmpfs says the same)
    "max_concurrent_uploads": errno.EAGAIN,
    "handles": errno.ENFILE,  # the mount's open files and directories: as a system out of file handles
    "audit_backpressure": errno.EAGAIN,  # the launcher is behind: nothing was done, try again
    "path": errno.EINVAL,
    "not_found": errno.ENOENT,
    "exists": errno.EEXIST,
    "not_a_file": errno.EISDIR,
    "not_a_directory": errno.ENOTDIR,
    "not_empty": errno.ENOTEMPTY,
    "changed": errno.EAGAIN,
    "version": errno.ESTALE,
    "permission": errno.EACCES,
    "disk": errno.ENOSPC,
    "invalid": errno.EINVAL,
    "busy": errno.EBUSY,
    "io": errno.EIO,
}
# Refusals of a path's length or depth: what the kernel says of a name too long.
_TOO_LONG_WORDS = ("bytes (at most", "levels deep")


def errno_of(refusal: Refusal) -> int:
    """The errno for a refusal (EIO for a row this table does not know: never success)."""
    if refusal.row == "path" and any(words in str(refusal.detail) for words in _TOO_LONG_WORDS):
        return errno.ENAMETOOLONG
    return ROW_ERRNO.get(refusal.row, errno.EIO)
