"""Probe what this kernel can hold: Landlock ABI, netns, seccomp filters, openat2, cgroup layout, root."""

from __future__ import annotations

import errno
import importlib.util
import os

from launcher.kernel import cgroups, fuse_mount
from launcher.kernel._sys import libc, libseccomp
from launcher.kernel.probe_facts import KernelFacts

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0


def landlock_abi() -> int:
    """The Landlock ABI version, 0 when the kernel lacks Landlock or has it disabled."""
    try:
        return libc.landlock_create_ruleset(None, LANDLOCK_CREATE_RULESET_VERSION)
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0
        raise


def seccomp_filter_available() -> bool:
    """True when the kernel takes seccomp filters and libseccomp can be loaded to build them."""
    if not os.path.exists("/proc/sys/kernel/seccomp/actions_avail"):
        return False
    try:
        libseccomp.lib()
    except OSError:
        return False
    return True


FUSE_BINDING = "pyfuse3"  # what the fs door serves the mount with (the `mount` extra of pyproject.toml)


def fuse_missing() -> str | None:
    """Why the workspace cannot be mounted here: no FUSE device, or the fs door's binding is not installed."""
    device = fuse_mount.fuse_available()
    if device is not None:
        return device
    if importlib.util.find_spec(FUSE_BINDING) is None:
        return f"{FUSE_BINDING} is not installed for this Python (make installs it, with libfuse3-dev)"
    return None


def probe_kernel() -> KernelFacts:
    """Read the kernel's facts; no side effect beyond a closed probe fd."""
    places = cgroups.controller_places()
    memory, pids = places.get("memory"), places.get("pids")
    return KernelFacts(
        landlock_abi=landlock_abi(),
        netns=os.path.exists("/proc/self/ns/net"),
        seccomp_filter=seccomp_filter_available(),
        openat2=libc.openat2_available(),
        cgroup_memory=memory.version if memory else None,
        cgroup_pids=pids.version if pids else None,
        is_root=os.geteuid() == 0,
        fuse_missing=fuse_missing(),
    )
