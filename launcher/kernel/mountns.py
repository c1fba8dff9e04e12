"""A private root per component: only the paths it may use exist in its view of the filesystem.

Landlock (ABI ≤ 7) does not govern connect() to pathname Unix sockets, so without this a component reaches
every world-writable socket of the host (D-Bus, systemd-resolved, journald, X11, a 0666 socket anywhere).
Each component gets a fresh tmpfs as its root, holding bind mounts of exactly its own paths (the same ones
Landlock grants: system directories, Python, its private directory, its edges' door sockets), the root's
compatibility symlinks (/bin → usr/bin …), and a proc instance of the caller's pid namespace with
hidepid=invisible (other users' processes are not listed; for the app, in a pid namespace of its own, they
do not exist at all) and subset=pid: only process directories (and self, thread-self), none of proc's
host-wide files (interrupts, key-users, meminfo, sys/, …), which neither Python nor the doors read.
Everything else is not there (ENOENT).

A component with scratch space (the app) also gets one tmpfs of its own, size- and inode-limited, nosuid,
nodev, noexec, bound onto its HOME and TMPDIR mount points. Only this mount namespace holds it: it is freed
with the namespace, once the component's last process is gone, and never appears in the host's mounts.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from launcher.kernel._sys import libc

NEW_ROOT = "/tmp"  # any directory works as the mount point: it is covered by the new root's tmpfs
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 1 << 18
PROC = "/proc"
PROC_OPTIONS = "hidepid=invisible,subset=pid"
SCRATCH_STAGE = "/.scratch"  # where the scratch tmpfs is first mounted in the new root, before its dirs are bound
SCRATCH_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC


@dataclass(frozen=True)
class ScratchMount:
    """One tmpfs, owned by `uid`:`gid`, whose subdirectories are bound onto `dirs` (each a kept path's child)."""

    dirs: tuple[str, ...]
    size_bytes: int
    inodes: int
    uid: int
    gid: int


def tmpfs_options(scratch: ScratchMount) -> str:
    """The tmpfs mount data: its limits and its root's owner (0700). Pure."""
    return f"size={scratch.size_bytes},nr_inodes={scratch.inodes},mode=0700,uid={scratch.uid},gid={scratch.gid}"


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def minimal_paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The paths to bind (normalised, sorted), without those inside another kept path, nor /proc. Pure."""
    kept = sorted({os.path.normpath(p) for p in paths} - {"/"})
    kept = [p for p in kept if not _under(p, PROC)]
    return tuple(p for p in kept if not any(other != p and _under(p, other) for other in kept))


def _mount_point(path: str, like: int) -> None:
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if stat.S_ISDIR(os.fstat(like).st_mode):
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


def _root_symlinks(new_root: str) -> None:
    """/bin, /lib, /lib64, /sbin → usr/… on merged-/usr systems: programs name them."""
    for name in os.listdir("/"):
        link = os.path.join("/", name)
        if os.path.islink(link) and not os.path.lexists(new_root + link):
            os.symlink(os.readlink(link), new_root + link)


def _mount_scratch(new_root: str, scratch: ScratchMount) -> None:
    """The tmpfs at a stage, one subdirectory per dir bound onto it (the bind keeps the tmpfs's flags), the stage
    detached: the tmpfs lives on through its binds alone."""
    stage = new_root + SCRATCH_STAGE
    os.mkdir(stage, 0o700)
    libc.mount("tmpfs", stage, "tmpfs", SCRATCH_FLAGS, tmpfs_options(scratch))
    for path in scratch.dirs:
        inside = f"{stage}/{os.path.basename(path)}"
        os.mkdir(inside, 0o700)
        os.chown(inside, scratch.uid, scratch.gid)
        libc.mount(inside, new_root + path, None, MS_BIND)
    libc.umount2(stage, libc.MNT_DETACH)
    os.rmdir(stage)


def enter_private_root(
    keep: tuple[str, ...], proc_options: str | None = PROC_OPTIONS, scratch: ScratchMount | None = None,
) -> None:
    """In a forked child, as root: new mount namespace whose root holds only `keep` (and a private /proc), and
    `scratch`'s tmpfs on its dirs.

    The proc is of the pid namespace the caller is in: the app, pid 2 of its own, mounts its namespace's.
    """
    wanted = minimal_paths(keep)
    libc.unshare(libc.CLONE_NEWNS)
    libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
    # O_PATH handles first: the new root's tmpfs may cover some of the originals (a workspace under /tmp).
    handles = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in wanted if os.path.exists(path)}
    try:
        libc.mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k")
        for path, handle in handles.items():
            _mount_point(NEW_ROOT + path, handle)
            libc.mount(f"/proc/self/fd/{handle}", NEW_ROOT + path, None, MS_BIND | MS_REC)
    finally:
        for handle in handles.values():
            os.close(handle)
    if scratch is not None:
        _mount_scratch(NEW_ROOT, scratch)
    _root_symlinks(NEW_ROOT)
    os.makedirs(NEW_ROOT + PROC, mode=0o555, exist_ok=True)
    libc.mount("proc", NEW_ROOT + PROC, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, proc_options)
    old = NEW_ROOT + "/.old-root"
    os.mkdir(old, 0o700)
    libc.pivot_root(NEW_ROOT, old)
    os.chdir("/")
    libc.umount2("/.old-root", libc.MNT_DETACH)
    os.rmdir("/.old-root")
