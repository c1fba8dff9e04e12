"""Files the app must not read or write: secrets of the system (DAC), the audit log, the launcher's and other
components' state, its own cgroup limits. Most are not in the app's private root or its proc (ENOENT); the
barrier behind is shown with the app's uid in the host's mounts: DAC and the ptrace check, or, inside the
app's Landlock rules too, Landlock."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


def test_etc_shadow_is_refused_by_dac(attacks: AttackRun) -> None:
    """/etc is in the app's Landlock read paths: EACCES on /etc/shadow is DAC's (root:shadow 0640), and
    /etc/passwd beside it opens."""
    assert attacks.a.probes["file.etc_shadow"]["errno"] == "EACCES"
    assert attacks.a.probes["control.etc_passwd"]["errno"] is None


@pytest.mark.parametrize("probe", ["audit.list_root", "audit.read_log", "audit.append_log", "audit.create_file"])
def test_the_audit_log_is_out_of_reach(attacks: AttackRun, probe: str) -> None:
    """ENOENT: the audit root (under /var/lib, as the real one) is not in the app's private root. Behind it,
    in the app's Landlock rules: EACCES, Landlock (the root is mode 0755, DAC would list it; the session's
    dir is 0700 root besides). The log the app could not touch verifies intact (test_leftovers)."""
    assert (attacks.audit_root.stat().st_mode & 0o777) == 0o755
    assert attacks.a.probes[probe]["errno"] == "ENOENT"
    assert attacks.outside_landlocked[probe]["errno"] == "EACCES"
    assert not (attacks.audit_root / attacks.sid_a / "forged.jsonl").exists()


STATE = ["other_session.app_svid", "other_session.list_runtime", "own_session.keys_private_dir",
         "own_session.fs_private_dir"]


@pytest.mark.parametrize("probe", STATE)
def test_another_components_svid_and_state_are_not_in_the_apps_root(attacks: AttackRun, probe: str) -> None:
    """Session B's app SVID file (its only SVID file on disk; doors hold theirs in memfds, see
    test_door_paths), B's runtime dir and this session's door dirs: ENOENT, the private root (of the session's
    runtime dir it holds only the app's own private dir and fs.sock). Its own SVID opens (control)."""
    assert attacks.a.probes[probe]["errno"] == "ENOENT"
    assert attacks.a.probes["control.own_svid"]["result"] == "opened"


@pytest.mark.parametrize("probe", STATE)
def test_behind_the_root_other_components_state_refuses_the_apps_uid(attacks: AttackRun, probe: str) -> None:
    """The same paths in the host's mounts as the app's uid and groups: EACCES, DAC (private dirs 0700 of
    their owner, runtime dirs 0711: no listing)."""
    assert attacks.outside_as_app[probe]["errno"] == "EACCES"


def test_landlock_still_governs_the_private_root(attacks: AttackRun) -> None:
    """/run in the app's root is a directory of the root's tmpfs, root's 0755 (DAC would list it): EACCES is
    Landlock's, which has no rule for /run but the app's own private dir."""
    assert attacks.a.probes["landlock.list_root_run"]["errno"] == "EACCES"


@pytest.mark.parametrize("probe", ["cgroup.raise_memory", "cgroup.raise_pids", "cgroup.join_fs_door"])
def test_the_app_cannot_raise_its_limits_or_change_cgroup(attacks: AttackRun, probe: str) -> None:
    """memory.limit_in_bytes, pids.max, the fs door's cgroup.procs: ENOENT, /sys/fs/cgroup is not in the
    app's private root. Behind it, in the app's Landlock rules: EACCES, Landlock (root's files besides)."""
    assert attacks.a.probes[probe]["errno"] == "ENOENT"
    assert attacks.outside_landlocked[probe]["errno"] == "EACCES"


@pytest.mark.parametrize("probe", ["proc.launcher_root", "proc.launcher_mem"])
def test_proc_of_the_launcher_is_not_even_visible(attacks: AttackRun, probe: str) -> None:
    """/proc/<launcher>/root and /mem: ENOENT, the app's proc is its own pid namespace's (and hidepid=invisible:
    the launcher is root's process); in the host's /proc as the app's uid, EACCES from the ptrace check."""
    assert attacks.a.probes[probe]["errno"] == "ENOENT"
    assert attacks.outside_as_app[probe]["errno"] == "EACCES"


def test_a_sysctl_write_is_refused(attacks: AttackRun) -> None:
    """/proc/sys/kernel/hostname: ENOENT, the app's proc has subset=pid (no sys/); in the host's /proc inside
    the app's Landlock rules: EACCES (/proc is read-only to the app; root's 0644 file besides)."""
    assert attacks.a.probes["proc.sysctl_write"]["errno"] == "ENOENT"
    assert attacks.outside_landlocked["proc.sysctl_write"]["errno"] == "EACCES"
