"""The shell's overlay of the workspace (doors.shell.workspace "overlay"). Pure: no I/O.

Its commands see the workspace through an overlay mounted in the shell's private root at the workspace's own
path: the lower layer is the workspace (read-only, idmapped so the owner's files are the shell's), the upper
layer and its work directory are on a tmpfs of its own (size- and inode-limited, owned by the shell's user).
Like the scratch, the tmpfs exists only in the shell's mount namespace (launcher/kernel/overlay.py) and dies
with it; the host holds one empty root-owned mount point, where the door reads the upper layer (read-only) to
apply its changes through the fs door.
"""

from __future__ import annotations

from dataclasses import dataclass

from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths
from launcher.policy.scratch import MIB


@dataclass(frozen=True)
class Overlay:
    """Where the shell's overlay is mounted (the workspace's path), where its upper layer is shown, its size."""

    workspace: str
    upper: str
    size_mb: int
    inodes: int

    @property
    def size_bytes(self) -> int:
        return self.size_mb * MIB


def overlay_of(manifest: Manifest, role: str, layout: SessionPaths) -> Overlay | None:
    """The overlay of `role` (only the shell's, only in overlay mode), or None."""
    limits = manifest.overlay_limits() if role == "shell" else None
    if limits is None:
        return None
    return Overlay(manifest.workspace, layout.overlay_upper_dir(), *limits)


def overlay_meaning(overlay: Overlay) -> str:
    """The plan's words for the overlay row."""
    return (f"commands see the workspace through an overlay: they write freely into its upper layer (a private "
            f"tmpfs of {overlay.size_mb} MiB, part of the shell's memory limit, and {overlay.inodes} inodes; noexec), "
            "never into the workspace, which changes only when the shell door applies the upper layer through "
            "the fs door (edge shell→fs)")
