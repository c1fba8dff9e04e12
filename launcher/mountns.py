"""A private mount namespace per component: the host's shared runtime directories are hidden.

Landlock (ABI ≤ 7) does not govern connect() to pathname Unix sockets, so without this a component reaches
every world-writable socket of the host (D-Bus, systemd-resolved, journald, X11) under /run and /tmp. Each
component gets tmpfs over those directories with only its own paths bound back, and a proc instance with
hidepid=invisible so processes of other users (their command lines, their fds) are not even visible.
"""

from __future__ import annotations

import os
import stat

from launcher._sys import libc

MASKED = ("/run", "/tmp", "/var/tmp", "/dev/shm")
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 1 << 18


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def bind_back(paths: tuple[str, ...], masked: tuple[str, ...] = MASKED) -> tuple[str, ...]:
    """The paths (normalised) that lie under a masked directory, minus those inside another kept path. Pure."""
    kept = sorted({os.path.normpath(p) for p in paths if any(_under(os.path.normpath(p), m) for m in masked)})
    return tuple(p for p in kept if not any(other != p and _under(p, other) for other in kept))


def _mount_point(path: str, like: int) -> None:
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if stat.S_ISDIR(os.fstat(like).st_mode):
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


def enter_private_mounts(keep: tuple[str, ...], hide_processes: bool = True) -> None:
    """In a forked child, as root: new mount namespace, MASKED hidden, `keep` bound back, private /proc."""
    wanted = bind_back(keep)
    libc.unshare(libc.CLONE_NEWNS)
    libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
    # O_PATH handles taken before the masks go up: after that the originals can no longer be named.
    handles = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in wanted if os.path.exists(path)}
    try:
        for root in MASKED:
            if os.path.isdir(root) and not os.path.islink(root):
                libc.mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k")
        for path, handle in handles.items():
            _mount_point(path, handle)
            libc.mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
    finally:
        for handle in handles.values():
            os.close(handle)
    if hide_processes:
        libc.mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
