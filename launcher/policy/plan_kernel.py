"""What the kernel must offer for a plan row to be held: each check takes the probed facts and says why this
kernel (or this user) cannot hold the row, or None. Pure: the facts come from launcher/kernel/probe_facts.py."""

from __future__ import annotations

from collections.abc import Callable

from launcher.kernel import probe_facts
from launcher.kernel.probe_facts import KernelFacts

KernelCheck = Callable[[KernelFacts], "str | None"]


def root(facts: KernelFacts) -> str | None:
    return None if facts.is_root else "needs root to create users and hand out sockets (this ran without root)"


def netns(facts: KernelFacts) -> str | None:
    return root(facts) or (None if facts.netns else "this kernel has no network namespaces")


def _needs_landlock(since: int, what: str, facts: KernelFacts) -> str:
    return f"{what} needs Landlock ABI {since}; this kernel has ABI {facts.landlock_abi}"


def landlock_fs(what: str) -> KernelCheck:
    return lambda facts: None if facts.landlock_fs else _needs_landlock(probe_facts.LANDLOCK_FS_ABI, what, facts)


def landlock_tcp(facts: KernelFacts) -> str | None:
    return None if facts.landlock_tcp else _needs_landlock(probe_facts.LANDLOCK_TCP_ABI, "TCP rules", facts)


def landlock_scoping(facts: KernelFacts) -> str | None:
    what = "signal and socket scoping"
    return None if facts.landlock_scoping else _needs_landlock(probe_facts.LANDLOCK_SCOPING_ABI, what, facts)


def seccomp(facts: KernelFacts) -> str | None:
    return None if facts.seccomp_filter else "this kernel has no seccomp filters"


def cgroup(controller: str) -> KernelCheck:
    def check(facts: KernelFacts) -> str | None:
        place = facts.cgroup_memory if controller == "memory" else facts.cgroup_pids
        return None if place else f"no cgroup {controller} controller is available"
    return check


def openat2(facts: KernelFacts) -> str | None:
    return root(facts) or (None if facts.openat2 else "this kernel has no openat2 (RESOLVE_BENEATH)")


def fs_fence(facts: KernelFacts) -> str | None:
    return root(facts) or landlock_fs("keeping the app from writing the workspace directly")(facts)


def always(facts: KernelFacts) -> str | None:
    return None


def fuse(facts: KernelFacts) -> str | None:
    return root(facts) or facts.fuse_missing
