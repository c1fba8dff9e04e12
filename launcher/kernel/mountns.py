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

Each path is opened once, with openat2 (never through a magic link; a path the manifest names never through
any symlink, and it must still be the file the launcher checked before the session: its pin), and that same
fd is bound and then handed to Landlock. A bind is one mount, never its submounts (open_tree without
AT_RECURSIVE), and read-only unless the component may write there (mount_setattr before it is attached).

A component with scratch space (the app) also gets one tmpfs of its own, size- and inode-limited, nosuid,
nodev, noexec, bound onto its HOME and TMPDIR mount points. Only this mount namespace holds it: it is freed
with the namespace, once the component's last process is gone, and never appears in the host's mounts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from launcher.kernel import fuse_mount
from launcher.kernel._sys import libc
from launcher.kernel.mountinfo import mount_id_of
from launcher.kernel.overlay import OverlayMount, mount_overlay
from launcher.policy.layout import DEVPTS

NEW_ROOT = "/tmp"  # any directory works as the mount point: it is covered by the new root's tmpfs
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 1 << 18
PROC = "/proc"
PROC_OPTIONS = "hidepid=invisible,subset=pid"
REOPENS = 3  # times a launcher path replaced by rename while it is bound is opened again
Identity = tuple[int, int]  # (st_dev, st_ino)


class MountError(RuntimeError):
    """A kept path cannot be bound as the launcher checked it: the message names the path."""


@dataclass(frozen=True)
class Bind:
    """One path a private root holds, bound from the host."""

    path: str
    writable: bool = False
    # (st_dev, st_ino) the launcher resolved it to before the session: opened with no symlink at all and
    # refused unless it is still that file. None: a launcher path (plain symlinks followed, as the kernel would).
    pin: Identity | None = None


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


@dataclass(frozen=True)
class FuseAttach:
    """The workspace's FUSE mount (launcher/kernel/fuse_mount.py), detached, to attach at `path` in the new root."""

    path: str
    mount_fd: int


def tmpfs_options(scratch: ScratchMount) -> str:
    """The tmpfs mount data: its limits and its root's owner (0700). Pure."""
    return f"size={scratch.size_bytes},nr_inodes={scratch.inodes},mode=0700,uid={scratch.uid},gid={scratch.gid}"


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def planned(binds: tuple[Bind, ...]) -> tuple[Bind, ...]:
    """The binds to make, parents first: one per path (writable if any asks), without / and /proc. Pure."""
    merged: dict[str, Bind] = {}
    for bind in binds:
        path = os.path.normpath(bind.path)
        if path == "/" or _under(path, PROC):
            continue
        seen = merged.get(path)
        merged[path] = Bind(path, bind.writable or (seen is not None and seen.writable),
                            bind.pin if bind.pin is not None else (seen.pin if seen else None))
    return tuple(merged[path] for path in sorted(merged))


def own_mounts(binds: tuple[Bind, ...], mount_ids: Mapping[str, int]) -> tuple[tuple[Bind, Bind | None], ...]:
    """Which of `binds` (planned, opened: `mount_ids`) get a mount of their own, each with the nearest
    ancestor bound before it (None: its mount point is made in the new root's tmpfs). A path is seen through
    its ancestor's bind only when nothing differs: not pinned, same mount, same writability. Pure."""
    mounted: list[tuple[Bind, Bind | None]] = []
    for bind in binds:
        if bind.path not in mount_ids:
            continue
        ancestor = next((bound for bound, _ in reversed(mounted) if _under(bind.path, bound.path)), None)
        shown = (ancestor is not None and bind.pin is None and bind.writable == ancestor.writable
                 and mount_ids[bind.path] == mount_ids[ancestor.path])
        if not shown:
            mounted.append((bind, ancestor))
    return tuple(mounted)


def _open_source(bind: Bind) -> int | None:
    resolve = libc.RESOLVE_NO_MAGICLINKS | (libc.RESOLVE_NO_SYMLINKS if bind.pin is not None else 0)
    try:
        fd = libc.openat2(libc.AT_FDCWD, bind.path, os.O_PATH, resolve)
    except OSError as exc:
        if exc.errno == errno.ENOENT and bind.pin is None:
            return None  # a system path this distribution does not have: nothing to bind
        why = os.strerror(exc.errno or 0)
        raise MountError(f"{bind.path} cannot be opened without a symlink or magic link: {why}") from exc
    info = os.fstat(fd)
    if bind.pin is not None and (info.st_dev, info.st_ino) != bind.pin:
        os.close(fd)
        raise MountError(f"{bind.path} is no longer the file the launcher checked before the session started")
    return fd


def _mount_point(path: str, like: int) -> None:
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if stat.S_ISDIR(os.fstat(like).st_mode):
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


def _target(bind: Bind, source: int, inside: bool) -> int:
    """The mount point in the new root: inside a parent's bind it must exist there (nothing is made on the
    host's file system), reached with no symlink; else it is made in the new root's tmpfs."""
    where = NEW_ROOT + bind.path
    try:
        if not inside:  # made just now in the tmpfs, where no symlink is yet
            _mount_point(where, source)
            return os.open(where, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        return libc.openat2(libc.AT_FDCWD, where, os.O_PATH, libc.RESOLVE_NO_SYMLINKS | libc.RESOLVE_NO_MAGICLINKS)
    except OSError as exc:
        raise MountError(f"no mount point for {bind.path} in the private root: {os.strerror(exc.errno or 0)}") from exc


def _graft(bind: Bind, source: int, target: int) -> None:
    tree = libc.open_tree(source, libc.OPEN_TREE_CLONE)  # this one mount: no AT_RECURSIVE, no submount
    try:
        if not bind.writable:
            libc.mount_setattr(tree, libc.MOUNT_ATTR_RDONLY)
        libc.move_mount(tree, target)
    finally:
        os.close(tree)


def _reopened(bind: Bind, source: int, error: OSError) -> int:
    """ENOENT from move_mount: the file was renamed over since it was opened (/etc/passwd while accounts are
    made). A launcher path is opened again; a pinned one has changed after the launcher checked it."""
    if error.errno != errno.ENOENT or _under(bind.path, NEW_ROOT):
        raise error
    if bind.pin is not None:
        raise MountError(f"{bind.path} was replaced while the private root was made") from error
    reopened = _open_source(bind)
    if reopened is None:
        raise error
    os.close(source)
    return reopened


def _attach(bind: Bind, source: int, inside: bool) -> int:
    """Bind `source` at its place in the new root; the fd it was bound from (a new one if it was replaced)."""
    target = _target(bind, source, inside)
    try:
        for _ in range(REOPENS):
            try:
                _graft(bind, source, target)
                return source
            except OSError as exc:
                source = _reopened(bind, source, exc)
        _graft(bind, source, target)
        return source
    finally:
        os.close(target)


def _bind_all(wanted: tuple[Bind, ...]) -> dict[str, int]:
    # O_PATH handles first: the new root's tmpfs may cover some of the originals (a workspace under /tmp).
    handles: dict[str, int] = {}
    try:
        for bind in wanted:
            fd = _open_source(bind)
            if fd is not None:
                handles[bind.path] = fd
        mount_ids = {path: mount_id_of(fd) for path, fd in handles.items()}
        libc.mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k")
        for bind, ancestor in own_mounts(wanted, mount_ids):
            handles[bind.path] = _attach(bind, handles[bind.path], inside=ancestor is not None)
    except BaseException:
        for fd in handles.values():
            with contextlib.suppress(OSError):  # one replaced in _attach may be closed already
                os.close(fd)
        raise
    return handles


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


def _mount_workspace(new_root: str, fuse: FuseAttach, handles: dict[str, int]) -> None:
    """Attach the FUSE mount at its path (a directory made in the tmpfs, or the one a bind already shows, reached
    with no symlink); Landlock then grants the mount's root, not what it covers."""
    where = new_root + fuse.path
    try:
        os.makedirs(where, mode=0o755, exist_ok=True)
        target = libc.openat2(libc.AT_FDCWD, where, os.O_PATH | os.O_DIRECTORY,
                              libc.RESOLVE_NO_SYMLINKS | libc.RESOLVE_NO_MAGICLINKS)
    except OSError as exc:
        raise MountError(f"no mount point for the workspace {fuse.path}: {os.strerror(exc.errno or 0)}") from exc
    try:
        fuse_mount.attach(fuse.mount_fd, target)
    finally:
        os.close(target)
    covered = handles.pop(fuse.path, None)
    if covered is not None:
        os.close(covered)
    handles[fuse.path] = os.open(where, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


# A devpts of its own: its ptys are not the host's, and any uid in the namespace may open ptmx.
DEVPTS_OPTIONS = "newinstance,ptmxmode=0666,mode=0620"


def _mount_devpts(new_root: str) -> None:
    """A new devpts instance at /dev/pts and /dev/ptmx pointing into it (the shell door's ttys)."""
    os.makedirs(new_root + DEVPTS, mode=0o755, exist_ok=True)
    libc.mount("devpts", new_root + DEVPTS, "devpts", MS_NOSUID | MS_NOEXEC, DEVPTS_OPTIONS)
    os.symlink("pts/ptmx", new_root + "/dev/ptmx")


def enter_private_root(
    keep: tuple[Bind, ...], proc_options: str | None = PROC_OPTIONS, scratch: ScratchMount | None = None,
    devpts: bool = False, workspace: FuseAttach | None = None, overlay: OverlayMount | None = None,
) -> dict[str, int]:
    """In a forked child, as root: new mount namespace whose root holds only `keep` (and a private /proc), and
    `scratch`'s tmpfs on its dirs, with `devpts` a devpts instance of its own at /dev/pts, with `workspace`
    the fs door's FUSE mount at the workspace path, and with `overlay` the shell's overlay over the workspace's
    (kept, read-only) bind (kernel/overlay.py).

    The proc is of the pid namespace the caller is in: the app, pid 2 of its own, mounts its namespace's.
    Returns the O_PATH fd each kept path was bound from, by path, for Landlock's rules; the caller closes them.
    """
    wanted = planned(keep)
    libc.unshare(libc.CLONE_NEWNS)
    libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
    handles = _bind_all(wanted)
    if scratch is not None:
        _mount_scratch(NEW_ROOT, scratch)
        # Landlock must grant the tmpfs's directories, not the host's mount points they now cover.
        for path in scratch.dirs:
            covered = handles.pop(path, None)
            if covered is not None:
                os.close(covered)
            handles[path] = os.open(NEW_ROOT + path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if overlay is not None:
        # Landlock must grant the overlay's root, not the workspace it covers (its lower layer).
        merged_at = os.path.normpath(overlay.workspace)
        lower = handles.pop(merged_at)
        try:
            handles[merged_at] = mount_overlay(NEW_ROOT, overlay, lower, SCRATCH_FLAGS)
        finally:
            os.close(lower)
    if devpts:
        _mount_devpts(NEW_ROOT)
    if workspace is not None:
        _mount_workspace(NEW_ROOT, workspace, handles)
    _root_symlinks(NEW_ROOT)
    os.makedirs(NEW_ROOT + PROC, mode=0o555, exist_ok=True)
    libc.mount("proc", NEW_ROOT + PROC, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, proc_options)
    old = NEW_ROOT + "/.old-root"
    os.mkdir(old, 0o700)
    libc.pivot_root(NEW_ROOT, old)
    os.chdir("/")
    libc.umount2("/.old-root", libc.MNT_DETACH)
    os.rmdir("/.old-root")
    return handles
