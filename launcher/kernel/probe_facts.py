"""What the kernel here can hold. Pure record; `launcher.kernel.probe.probe_kernel()` fills it in."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelFacts:
    landlock_abi: int  # 0 when Landlock is absent or disabled
    netns: bool
    seccomp_filter: bool
    openat2: bool
    cgroup_memory: str | None  # "v2", "v1" or None: where a memory limit can be set
    cgroup_pids: str | None  # "v2", "v1" or None
    is_root: bool

    @property
    def landlock_fs(self) -> bool:
        return self.landlock_abi >= 1

    @property
    def landlock_tcp(self) -> bool:
        return self.landlock_abi >= 4

    @property
    def landlock_scoping(self) -> bool:
        return self.landlock_abi >= 6


FULL_KERNEL = KernelFacts(
    landlock_abi=7, netns=True, seccomp_filter=True, openat2=True,
    cgroup_memory="v1", cgroup_pids="v1", is_root=True,
)
