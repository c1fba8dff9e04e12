"""Where the door finds its own cgroups in its mount namespace. Pure parse of /proc/self/{cgroup,mountinfo}."""

from __future__ import annotations

from doors.shell._cgroup import cgroup_dirs_of

PROC_CGROUP = "12:pids:/sharness/0123abcd/shell\n7:memory:/sharness/0123abcd/shell\n3:cpu,cpuacct:/\n0::/\n"
# The shell's private root binds exactly its two cgroup directories (root = the bound path in the hierarchy).
MOUNTINFO = (
    "101 90 0:33 /sharness/0123abcd/shell /sys/fs/cgroup/memory/sharness/0123abcd/shell rw,nosuid - cgroup "
    "cgroup rw,memory\n"
    "102 90 0:34 /sharness/0123abcd/shell /sys/fs/cgroup/pids/sharness/0123abcd/shell rw,nosuid - cgroup "
    "cgroup rw,pids\n"
    "103 90 0:40 / /proc rw - proc proc rw,hidepid=invisible\n"
)


def test_the_bound_v1_directories_are_found() -> None:
    assert cgroup_dirs_of(PROC_CGROUP, MOUNTINFO) == ("/sys/fs/cgroup/memory/sharness/0123abcd/shell",
                                                      "/sys/fs/cgroup/pids/sharness/0123abcd/shell")


def test_a_whole_hierarchy_mount_maps_the_path_beneath_it() -> None:
    whole = "30 25 0:26 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    assert cgroup_dirs_of(PROC_CGROUP, whole) == ("/sys/fs/cgroup/pids/sharness/0123abcd/shell",)


def test_v2_uses_the_unified_line() -> None:
    unified = "40 25 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert cgroup_dirs_of("0::/sharness/0123abcd/shell\n", unified) == ("/sys/fs/cgroup/sharness/0123abcd/shell",)


def test_a_mount_of_another_cgroup_is_not_ours() -> None:
    other = "101 90 0:33 /sharness/ffffffff/app /x rw - cgroup cgroup rw,memory\n"
    assert cgroup_dirs_of(PROC_CGROUP, other) == ()
