"""Files the app must not read or write: secrets of the system (DAC), the audit log and the launcher's and
other components' state (Landlock, and DAC behind it), its own cgroup limits."""

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
    """The audit root is mode 0755 (DAC would list it): EACCES there is Landlock's; the session's dir is 0700
    root besides. The log the app could not touch verifies intact (test_leftovers)."""
    assert (attacks.audit_root.stat().st_mode & 0o777) == 0o755
    assert attacks.a.probes[probe]["errno"] == "EACCES"
    assert not (attacks.audit_root / attacks.sid_a / "forged.jsonl").exists()


@pytest.mark.parametrize("probe", ["other_session.app_svid", "other_session.list_runtime",
                                   "own_session.keys_private_dir", "own_session.fs_private_dir"])
def test_another_components_svid_and_state_are_refused(attacks: AttackRun, probe: str) -> None:
    """Session B's app SVID file (its only SVID file on disk; doors hold theirs in memfds, see
    test_door_paths), B's runtime dir and this session's door dirs: EACCES (Landlock; 0700 owners behind it)."""
    assert attacks.a.probes[probe]["errno"] == "EACCES"
    assert attacks.a.probes["control.own_svid"]["errno"] is None


@pytest.mark.parametrize("probe", ["cgroup.raise_memory", "cgroup.raise_pids", "cgroup.join_fs_door"])
def test_the_app_cannot_raise_its_limits_or_change_cgroup(attacks: AttackRun, probe: str) -> None:
    """memory.limit_in_bytes, pids.max, the fs door's cgroup.procs: EACCES (Landlock: /sys/fs is not
    readable, DAC: root's files)."""
    assert attacks.a.probes[probe]["errno"] == "EACCES"


@pytest.mark.parametrize("probe", ["proc.launcher_root", "proc.sysctl_write"])
def test_proc_of_the_launcher_and_sysctls_are_refused(attacks: AttackRun, probe: str) -> None:
    assert attacks.a.probes[probe]["errno"] == "EACCES"
