"""The shell's overlay of the workspace, mounted in its private root while that root is built (as root).

The lower layer is a read-only clone of the workspace's bind, idmapped so that its owner's files are the
shell user's: overlayfs checks a caller's permission on the overlay's inode, which carries the lower file's
owner, so without the idmap the shell could write nowhere in a workspace that is 0755 its owner's. The upper
layer and the work directory are on one tmpfs, size- and inode-limited, owned by the shell's user. The
options keep the upper layer readable, as plain files, by the unprivileged door that applies it:
`userxattr` (opaque directories marked with `user.overlay.opaque`, which the shell's user may read, not
`trusted.*`), `redirect_dir=nofollow` (renaming a lower directory is EXDEV, and mv falls back to copy and
delete: no redirect xattr to interpret), `metacopy=off` (a copied-up file holds its data), `index=off`,
`xino=off`. Whiteouts are 0/0 character devices.

The overlay is mounted at the workspace's own path (over its read-only bind, so commands' paths are the
app's), noexec, nosuid, nodev; the upper layer is bound read-only where the door reads it. The stage that
held the layers is detached: the overlay keeps its own references to them. Nothing of it is on the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from launcher.kernel._sys import libc

STAGE = "/.overlay"  # in the new root: the layers' tmpfs and the lower clone, detached once the overlay is up
OPTIONS = "userxattr,redirect_dir=nofollow,metacopy=off,index=off,xino=off"
CLONE_NEWUSER = 0x10000000
MS_BIND, MS_REMOUNT, MS_RDONLY = 0x1000, 0x20, 0x1


@dataclass(frozen=True)
class OverlayMount:
    """The shell's overlay: at `workspace`, its upper layer shown read-only at `upper`, owned by `uid`:`gid`,
    the workspace owner's ids (`owner_uid`:`owner_gid`) shown as those in the lower layer."""

    workspace: str
    upper: str
    size_bytes: int
    inodes: int
    uid: int
    gid: int
    owner_uid: int
    owner_gid: int


def layer_options(stage: str) -> str:
    """The overlay's mount data for layers under `stage` (a path the launcher made: no comma, no colon). Pure."""
    return f"lowerdir={stage}/lower,upperdir={stage}/upper,workdir={stage}/work,{OPTIONS}"


def tmpfs_options(overlay: OverlayMount) -> str:
    """The layers' tmpfs mount data: its limits, its root the shell user's (0700). Pure."""
    return f"size={overlay.size_bytes},nr_inodes={overlay.inodes},mode=0700,uid={overlay.uid},gid={overlay.gid}"


def idmap_userns(overlay: OverlayMount) -> int:
    """A user namespace whose only ids are the workspace owner's, mapped to the shell user's: an fd on it.

    A child makes it (unshare), the caller writes its maps (root in the parent namespace may) and keeps an
    fd; the child then exits, and the namespace lives on through the fd.
    """
    made_r, made_w = os.pipe2(os.O_CLOEXEC)
    done_r, done_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(made_r)
            os.close(done_w)  # or its own copy would keep the read below from ever seeing EOF
            libc.unshare(CLONE_NEWUSER)
            os.write(made_w, b"x")
            os.read(done_r, 1)
        finally:
            os._exit(0)
    os.close(made_w)
    os.close(done_r)
    try:
        if os.read(made_r, 1) != b"x":
            raise OSError(0, "the child that makes the idmap's user namespace failed")
        _write(f"/proc/{pid}/uid_map", f"{overlay.owner_uid} {overlay.uid} 1\n")
        _write(f"/proc/{pid}/gid_map", f"{overlay.owner_gid} {overlay.gid} 1\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(made_r)
        os.close(done_w)
        os.waitpid(pid, 0)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _lower(stage: str, workspace_fd: int, overlay: OverlayMount) -> None:
    """A read-only, idmapped clone of the workspace's mount (that one mount), at `stage`/lower."""
    userns = idmap_userns(overlay)
    try:
        tree = libc.open_tree(workspace_fd, libc.OPEN_TREE_CLONE)
        try:
            libc.mount_setattr(tree, libc.MOUNT_ATTR_RDONLY | libc.MOUNT_ATTR_IDMAP, userns)
            target = os.open(f"{stage}/lower", os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                libc.move_mount(tree, target)
            finally:
                os.close(target)
        finally:
            os.close(tree)
    finally:
        os.close(userns)


def _layers(stage: str, workspace_fd: int, overlay: OverlayMount, flags: int) -> None:
    libc.mount("tmpfs", stage, "tmpfs", flags, tmpfs_options(overlay))
    for name in ("lower", "upper", "work"):
        os.mkdir(f"{stage}/{name}", 0o700)
    # The merged root shows the upper root's owner and mode: the workspace's mode, the shell user's.
    os.chmod(f"{stage}/upper", os.fstat(workspace_fd).st_mode & 0o7777)
    os.chown(f"{stage}/upper", overlay.uid, overlay.gid)
    _lower(stage, workspace_fd, overlay)


def _move(source: str, target: str) -> None:
    """Move the mount at `source` onto `target`, reached with no symlink (it may lie inside a host bind)."""
    resolve = libc.RESOLVE_NO_SYMLINKS | libc.RESOLVE_NO_MAGICLINKS
    mounted = os.open(source, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        at = libc.openat2(libc.AT_FDCWD, target, os.O_PATH, resolve)
        try:
            libc.move_mount(mounted, at)
        finally:
            os.close(at)
    finally:
        os.close(mounted)


def mount_overlay(new_root: str, overlay: OverlayMount, workspace_fd: int, flags: int) -> int:
    """Mount the overlay over the workspace's bind in `new_root` (mount `flags`: nosuid, nodev, noexec), its upper
    layer read-only at `overlay.upper`; return an O_PATH fd on the merged root (Landlock grants that)."""
    stage = new_root + STAGE
    os.mkdir(stage, 0o700)
    _layers(stage, workspace_fd, overlay, flags)
    os.mkdir(f"{stage}/merged", 0o700)
    libc.mount("overlay", f"{stage}/merged", "overlay", flags, layer_options(stage))
    _move(f"{stage}/merged", new_root + overlay.workspace)
    shown = new_root + overlay.upper
    libc.mount(f"{stage}/upper", shown, None, MS_BIND)
    libc.mount(None, shown, None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags)
    libc.umount2(f"{stage}/lower", libc.MNT_DETACH)
    libc.umount2(stage, libc.MNT_DETACH)
    os.rmdir(stage)
    resolve = libc.RESOLVE_NO_SYMLINKS | libc.RESOLVE_NO_MAGICLINKS
    return libc.openat2(libc.AT_FDCWD, new_root + overlay.workspace, os.O_PATH | os.O_DIRECTORY, resolve)
