"""Which directories of the workspace look names up folding case, found once at start. Blocking calls.

On a file system that folds case (vfat, exfat, ntfs3, HFS+, SMB) every lookup does; on ext4, f2fs and
tmpfs a directory does when it carries FS_CASEFOLD_FL (`chattr +F`, set on an empty directory, inherited
by every directory made in it). There `.GIT/config` opens `.git/config`, so the rows must compare names
the same way (doors.fs._rules.fold_name). Only the directories on a prefix's path matter: a name is
looked up in its parent, so `.GIT` matches `.git` when the workspace root folds, `src/.GIT` matches
`src/.git` when `src` does. A directory not there yet is judged by its nearest existing ancestor, since it
will inherit the flag when the door makes it; renaming a directory onto a prefix's path is refused by the
rows (a rename may not arrive above a protected prefix). The door never sets the flag itself.
"""

from __future__ import annotations

import array
import errno
import fcntl
import os
from collections.abc import Iterable
from typing import Any

from doors._ffi import ffi as _ffi  # out-of-line: no C parser at import (doors/_ffi_cdefs.py)
from doors.fs._openat2 import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2
from doors.fs._paths import WorkspacePath

FS_IOC_GETFLAGS = 0x80086601  # _IOR('f', 1, long), the same on x86_64 and aarch64
FS_CASEFOLD_FL = 0x40000000
# statfs f_type of file systems whose every lookup folds case (linux/magic.h and the file systems' own).
FOLDING_FILE_SYSTEMS = {
    0x4D44: "vfat/msdos",
    0x2011BAB0: "exfat",
    0x7366746E: "ntfs3",  # folds with its nocase option only; counted as folding, which refuses more
    0x5346544E: "ntfs",
    0x482B: "hfsplus",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
}

_libc: Any = _ffi.dlopen(None)
_STATFS_BYTES = 256  # struct statfs is 120 bytes on 64-bit Linux; f_type (a long) comes first


def fs_type(fd: int) -> int:
    """The statfs f_type of the file system `fd` is on (an O_PATH fd will do)."""
    buffer = _ffi.new("char[]", _STATFS_BYTES)
    if _libc.fstatfs(fd, buffer) != 0:
        err = _ffi.errno
        raise OSError(err, f"fstatfs: {os.strerror(err)}")
    return int(_ffi.cast("unsigned long *", buffer)[0])


def has_casefold_flag(fd: int) -> bool:
    """Whether the directory open at `fd` (not O_PATH) carries FS_CASEFOLD_FL; False where the file system
    has no such flags (ENOTTY, EINVAL, EOPNOTSUPP)."""
    flags = array.array("i", [0, 0])  # the kernel writes an int; two leave room for a long
    try:
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags, True)
    except OSError as exc:
        if exc.errno in (errno.ENOTTY, errno.EINVAL, errno.EOPNOTSUPP):
            return False
        raise
    return bool(flags[0] & FS_CASEFOLD_FL)


def _folds(root_fd: int, directory: WorkspacePath, seen: dict[WorkspacePath, bool]) -> bool:
    if directory in seen:
        return seen[directory]
    try:
        fd = openat2(root_fd, directory.text or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, 0,
                     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    except OSError:
        # Not there (or not a directory we may open): what the door makes there inherits its parent's flag.
        folds = not directory.is_root and _folds(root_fd, directory.parent, seen)
    else:
        try:
            folds = has_casefold_flag(fd)
        finally:
            os.close(fd)
    seen[directory] = folds
    return folds


def casefold_dirs(root_fd: int, prefixes: Iterable[WorkspacePath]) -> frozenset[WorkspacePath]:
    """The directories on the prefixes' paths (the root included) whose lookups fold case."""
    every_lookup_folds = fs_type(root_fd) in FOLDING_FILE_SYSTEMS
    seen: dict[WorkspacePath, bool] = {}
    found = set()
    for prefix in prefixes:
        for depth in range(len(prefix.parts)):
            directory = WorkspacePath(prefix.parts[:depth])
            if every_lookup_folds or _folds(root_fd, directory, seen):
                found.add(directory)
    return frozenset(found)
