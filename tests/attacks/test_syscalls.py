"""Syscalls the seccomp filter denies, aimed where the kernel alone would allow them (the app itself, its own
keyring, its own netns), so EPERM names seccomp; the same calls aimed at a door are refused too."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root

# probe -> what the kernel alone would have said (why EPERM here is seccomp's)
SECCOMP_EPERM = {
    "seccomp.process_vm_readv_self": "success: reading its own memory needs no privilege",
    "seccomp.process_vm_readv_door": "EPERM too (another uid)",
    "seccomp.perf_event_open_self": "success: user-only self profiling is allowed at perf_event_paranoid 2",
    "seccomp.perf_event_open_door": "EACCES (paranoid 2, another uid)",
    "seccomp.bpf_map_create": "EPERM too (unprivileged_bpf_disabled=2)",
    "seccomp.keyctl_own_keyring": "success: its own process keyring",
    "seccomp.add_key": "success: a user key in its own keyring",
    "seccomp.mount_tmpfs": "EPERM too (no CAP_SYS_ADMIN)",
    "seccomp.fsopen": "EPERM too (no CAP_SYS_ADMIN)",
    "seccomp.open_tree": "EPERM too for a clone; plain open_tree needs none",
    "seccomp.chroot": "EPERM too (no CAP_SYS_CHROOT)",
    "seccomp.name_to_handle_at": "success: unprivileged",
    "seccomp.open_by_handle_at": "EPERM too (no CAP_DAC_READ_SEARCH)",
    "seccomp.userfaultfd_user_mode": "success: UFFD_USER_MODE_ONLY is unprivileged",
    "seccomp.kcmp_self": "success: comparing its own fds",
    "seccomp.setns_own_netns": "EPERM too (no CAP_SYS_ADMIN)",
    "seccomp.unshare_mount_ns": "EPERM too without a user namespace",
    "mounts.umount_proc": "EPERM too (no CAP_SYS_ADMIN): its hidepid proc stays",
    "mounts.umount_root": "EPERM too (no CAP_SYS_ADMIN): its private root stays",
}


@pytest.mark.parametrize("probe", sorted(SECCOMP_EPERM))
def test_a_denied_syscall_gives_eperm(attacks: AttackRun, probe: str) -> None:
    seen = attacks.a.probes[probe]
    assert seen["errno"] == "EPERM", f"{seen}; the kernel alone would give {SECCOMP_EPERM[probe]}"


def test_ptrace_traceme_and_clone_newuser_are_refused_in_a_child(attacks: AttackRun) -> None:
    """The child's exit code is the errno: 1 = EPERM. TRACEME and CLONE_NEWUSER need no privilege here."""
    assert attacks.a.probes["seccomp.ptrace_traceme"] == {"probe": "seccomp.ptrace_traceme", "exit": 1}
    assert attacks.a.probes["seccomp.clone_newuser"] == {"probe": "seccomp.clone_newuser", "exit": 1}


def test_an_x32_syscall_kills_the_caller(attacks: AttackRun) -> None:
    """The bad-arch action: SIGSYS, not an errno."""
    assert attacks.a.probes["seccomp.x32_getpid"] == {"probe": "seccomp.x32_getpid", "signal": "SIGSYS"}


def test_another_components_netns_file_is_not_in_the_apps_root(attacks: AttackRun) -> None:
    """/run/netns/sh-<sid>-keys, opened for reading and as O_PATH for setns (O_PATH is not fenced by Landlock's
    read right): ENOENT, the private root. Behind it: in the app's Landlock rules EACCES, Landlock; with the
    app's uid alone it opens (mode 0444: DAC is no layer here); setns itself is seccomp's EPERM
    (setns_own_netns)."""
    assert attacks.a.probes["netns.open_run_netns"]["errno"] == "ENOENT"
    assert attacks.a.probes["netns.setns_run_netns_opath"]["errno"] == "ENOENT"
    assert attacks.outside_landlocked["netns.open_run_netns"]["errno"] == "EACCES"
    assert attacks.outside_as_app["netns.open_run_netns"]["result"] == "opened"


def test_a_doors_netns_is_not_reached_through_proc(attacks: AttackRun) -> None:
    """/proc/<keys>/ns/net: ENOENT, proc hidepid=invisible; in the host's /proc as the app's uid, EACCES from
    the ptrace access check."""
    assert attacks.a.probes["netns.open_door_ns"]["errno"] == "ENOENT"
    assert attacks.outside_as_app["netns.open_door_ns"]["errno"] == "EACCES"
