"""The mount table as this process sees it (/proc/self/mountinfo), and the mount an open fd lies on.

The preflight asks it which file system a manifest path is on and whether mounts lie beneath it; the private
root (kernel/mountns.py) asks on which mount each kept path lies, to bind a nested path on its own when its
parent's bind would not show it. Parsing is pure; reading mountinfo and one statx are the only I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from launcher.kernel._sys import libc

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo: the fields the launcher decides on."""

    mount_id: int
    mount_point: str
    fstype: str


def _unescape(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in paths as \040, \011, \012, \134.
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def parse_mountinfo(text: str) -> tuple[Mount, ...]:
    """Every mount of a mountinfo text (proc(5)): id, mount point and file system type. Pure."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) < 10 or "-" not in fields[6:]:
            continue
        separator = fields.index("-", 6)
        mounts.append(Mount(int(fields[0]), _unescape(fields[4]), fields[separator + 1]))
    return tuple(mounts)


def mounts_beneath(mounts: tuple[Mount, ...], path: str) -> tuple[str, ...]:
    """The mount points strictly inside `path` (absolute, normalised, no symlink in it). Pure."""
    prefix = path.rstrip("/") + "/"
    inside = {mount.mount_point for mount in mounts if mount.mount_point.startswith(prefix)}
    return tuple(sorted(inside - {path}))


def mount_table() -> tuple[Mount, ...]:
    """This process's mounts, now."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
        return parse_mountinfo(table.read())


def mount_id_of(fd: int) -> int:
    """The id of the mount the open file `fd` lies on (its `mnt_id` in /proc/self/fdinfo, through statx)."""
    return libc.statx_mount_id(fd)


def fstype_of(mounts: tuple[Mount, ...], mount_id: int) -> str:
    """The file system type of mount `mount_id`, or '' when the table does not hold it. Pure."""
    return next((mount.fstype for mount in mounts if mount.mount_id == mount_id), "")
