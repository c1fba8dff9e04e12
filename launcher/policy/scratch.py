"""A component's scratch space: HOME and TMPDIR on one private tmpfs with size and inode limits. Pure: no I/O.

The tmpfs exists only in the component's mount namespace (launcher/kernel/mountns.py mounts it in its private
root, nosuid, nodev, noexec); the host holds two empty root-owned mount points. It dies with the namespace,
when the component's last process is gone, so nothing of it outlives the session. Its pages are charged to
the memory cgroup of the process that writes them, the component's own: the size is part of max_memory_mb,
not beside it (launcher/manifest refuses a scratch_mb that is not below it).
"""

from __future__ import annotations

from dataclasses import dataclass

from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths

# The components with a HOME and a TMPDIR of their own: the app, and the shell's commands once it is built.
SCRATCH_ROLES = frozenset({"app", "shell"})
MIB = 1024 * 1024


@dataclass(frozen=True)
class Scratch:
    """Where a component's scratch tmpfs is mounted (HOME, TMPDIR) and how much it holds."""

    home: str
    tmp: str
    size_mb: int
    inodes: int

    @property
    def dirs(self) -> tuple[str, ...]:
        return (self.home, self.tmp)

    @property
    def size_bytes(self) -> int:
        return self.size_mb * MIB


def scratch_of(manifest: Manifest, role: str, layout: SessionPaths) -> Scratch | None:
    """The scratch space of `role`, or None for a component that has none (a door)."""
    if role not in SCRATCH_ROLES:
        return None
    size_mb, inodes = manifest.scratch_limits(role)
    return Scratch(home=layout.home_dir(role), tmp=layout.tmp_dir(role), size_mb=size_mb, inodes=inodes)


def scratch_meaning(scratch: Scratch) -> str:
    """The plan's words for the scratch row."""
    return (f"HOME and TMPDIR: a private tmpfs of {scratch.size_mb} MiB (part of its memory limit) and "
            f"{scratch.inodes} inodes, nosuid, nodev, noexec; ENOSPC past either, gone with the session")
