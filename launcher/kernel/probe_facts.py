"""What the kernel here can hold. Pure record; `launcher.kernel.probe.probe_kernel()` fills it in."""

from __future__ import annotations

from dataclasses import dataclass

# The Landlock ABI that brought each feature the plan asks for.
LANDLOCK_FS_ABI = 1  # file rules
LANDLOCK_TCP_ABI = 4  # TCP bind and connect rules
LANDLOCK_SCOPING_ABI = 6  # signal and abstract-socket scoping
LANDLOCK_RESOLVE_UNIX_ABI = 9  # connect() to pathname Unix sockets (LANDLOCK_ACCESS_FS_RESOLVE_UNIX)


@dataclass(frozen=True)
class KernelFacts:
    landlock_abi: int  # 0 when Landlock is absent or disabled
    netns: bool
    seccomp_filter: bool
    openat2: bool
    cgroup_memory: str | None  # "v2", "v1" or None: where a memory limit can be set
    cgroup_pids: str | None  # "v2", "v1" or None
    is_root: bool
    # Why the workspace can be no FUSE mount here (no /dev/fuse, no pyfuse3 for the fs door), or None when it can.
    fuse_missing: str | None = None

    @property
    def fuse(self) -> bool:
        """The launcher can mount the workspace with FUSE, and the fs door can serve it."""
        return self.fuse_missing is None

    @property
    def landlock_fs(self) -> bool:
        """Landlock can hold file rules."""
        return self.landlock_abi >= LANDLOCK_FS_ABI

    @property
    def landlock_tcp(self) -> bool:
        """Landlock can hold TCP bind and connect rules."""
        return self.landlock_abi >= LANDLOCK_TCP_ABI

    @property
    def landlock_scoping(self) -> bool:
        """Landlock can scope signals and abstract Unix sockets to the domain."""
        return self.landlock_abi >= LANDLOCK_SCOPING_ABI

    @property
    def landlock_resolve_unix(self) -> bool:
        """Landlock governs connect() to pathname Unix sockets."""
        return self.landlock_abi >= LANDLOCK_RESOLVE_UNIX_ABI


FULL_KERNEL = KernelFacts(
    landlock_abi=7, netns=True, seccomp_filter=True, openat2=True,
    cgroup_memory="v1", cgroup_pids="v1", is_root=True,
)
