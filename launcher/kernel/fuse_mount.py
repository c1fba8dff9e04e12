"""The workspace as a FUSE mount: the launcher (root) opens /dev/fuse and makes a detached mount of it, the fs door
serves the device fd unprivileged, and the app's child attaches the mount at the workspace path in its own mount
namespace only (launcher/kernel/mountns.py).

The mount is made with the new mount API (fsopen, fsconfig, fsmount): its superblock exists, attached nowhere,
before any door is forked, so the fs door can serve it from its first instant (the kernel's INIT request waits
on the device), and no namespace but the app's ever holds it. Nothing outlives its fds: a detached mount dies
with its last fd, the app's attachment with the app's mount namespace, the FUSE connection with the device's
last fd (the door's): so there is nothing to journal, and a door that dies aborts the connection (every request
in flight and every later one fails with ECONNABORTED / ENOTCONN; nothing hangs).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass

from launcher.kernel._sys import libc

FUSE_DEVICE = "/dev/fuse"
FUSE_DEVICE_NUMBERS = (10, 229)  # misc major 10, FUSE_MINOR
FSTYPE = "fuse"
SUBTYPE = "sharness"  # the mount shows as fuse.sharness
SOURCE = "sharness-fs"
ROOT_MODE = "40000"  # octal S_IFDIR: the root inode is a directory


@dataclass
class WorkspaceMount:
    """The FUSE device fd (for the fs door) and the detached mount on it (for the app's child); -1 once closed."""

    device_fd: int
    mount_fd: int

    def close_device(self) -> None:
        """Once the fs door holds the device: the launcher's copy must go, or the door's death would leave the
        connection open and the app's requests waiting on it."""
        fd, self.device_fd = self.device_fd, -1
        if fd >= 0:
            os.close(fd)

    def close_mount(self) -> None:
        """Once the app's child holds the mount (or the session ends without an app)."""
        fd, self.mount_fd = self.mount_fd, -1
        if fd >= 0:
            os.close(fd)

    def close(self) -> None:
        """Close what is still open."""
        with contextlib.suppress(OSError):
            self.close_device()
        with contextlib.suppress(OSError):
            self.close_mount()


def mount_options(device_fd: int, uid: int, gid: int) -> tuple[tuple[str, str | None], ...]:
    """The fsconfig keys of the workspace mount, in order (None: a flag). Pure.

    user_id/group_id name the serving door's ids; allow_other lets the app's uid in; default_permissions makes the
    kernel check modes against the attributes the door reports."""
    return (("source", SOURCE), ("subtype", SUBTYPE), ("fd", str(device_fd)), ("rootmode", ROOT_MODE),
            ("user_id", str(uid)), ("group_id", str(gid)), ("allow_other", None), ("default_permissions", None))


def fuse_available() -> str | None:
    """Why this machine cannot make the mount (no FUSE device), or None."""
    try:
        info = os.stat(FUSE_DEVICE)
    except OSError as exc:
        return f"{FUSE_DEVICE} is missing ({exc.strerror}): load the fuse module, or install fuse3"
    if not stat.S_ISCHR(info.st_mode) or (os.major(info.st_rdev), os.minor(info.st_rdev)) != FUSE_DEVICE_NUMBERS:
        return f"{FUSE_DEVICE} is not the FUSE character device"
    return None


def make_workspace_mount(uid: int, gid: int) -> WorkspaceMount:
    """As root: open /dev/fuse and make a detached nosuid,nodev fuse.sharness mount on it for a door with these ids."""
    device_fd = os.open(FUSE_DEVICE, os.O_RDWR | os.O_CLOEXEC)
    try:
        context_fd = libc.fsopen(FSTYPE)
        try:
            for key, value in mount_options(device_fd, uid, gid):
                libc.fsconfig(context_fd, key, value)
            mount_fd = libc.fsmount(context_fd, libc.MOUNT_ATTR_NOSUID | libc.MOUNT_ATTR_NODEV)
        finally:
            os.close(context_fd)
    except BaseException:
        os.close(device_fd)
        raise
    return WorkspaceMount(device_fd, mount_fd)


def attach(mount_fd: int, target_fd: int) -> None:
    """Attach the detached mount on the directory `target_fd` names (in the caller's mount namespace)."""
    libc.move_mount(mount_fd, target_fd)
