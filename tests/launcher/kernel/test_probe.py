"""probe_kernel on this machine: every fact read, none guessed."""

from __future__ import annotations

import os

from launcher.kernel.probe import probe_kernel
from launcher.kernel.probe_facts import KernelFacts


def test_probe_reads_this_kernel() -> None:
    facts = probe_kernel()
    assert isinstance(facts, KernelFacts)
    assert facts.is_root == (os.geteuid() == 0)
    assert facts.netns == os.path.exists("/proc/self/ns/net")
    assert facts.landlock_abi >= 0
    assert facts.cgroup_memory in ("v1", "v2", None) and facts.cgroup_pids in ("v1", "v2", None)
    with open("/proc/self/status") as f:
        assert ("Seccomp_filters" in f.read()) or not facts.seccomp_filter


def _cgroup_mounts() -> list[tuple[str, set[str]]]:
    """(fstype, super options) of every cgroup mount, read independently of launcher.kernel.cgroups."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fstype, _source, options = line.split(" - ", 1)[1].split()[:3]
            if fstype.startswith("cgroup"):
                found.append((fstype, set(options.split(","))))
    return found


def test_probe_matches_the_mounts_and_the_lsm_list() -> None:
    facts = probe_kernel()
    mounts = _cgroup_mounts()
    for ctrl, fact in (("memory", facts.cgroup_memory), ("pids", facts.cgroup_pids)):
        v1 = any(fstype == "cgroup" and ctrl in opts for fstype, opts in mounts)
        assert fact == "v2" or fact == ("v1" if v1 else None), (ctrl, fact, mounts)
    lsm = "/sys/kernel/security/lsm"
    if os.path.exists(lsm):
        with open(lsm) as f:
            assert (facts.landlock_abi > 0) == ("landlock" in f.read().split(","))


def test_the_workspace_mount_options_name_the_door_and_let_the_app_in() -> None:
    from launcher.kernel.fuse_mount import mount_options

    options = dict(mount_options(7, 1234, 5678))
    assert options == {"source": "sharness-fs", "subtype": "sharness", "fd": "7", "rootmode": "40000",
                       "user_id": "1234", "group_id": "5678", "allow_other": None, "default_permissions": None}
