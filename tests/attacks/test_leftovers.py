"""After both sessions: nothing of theirs is left, the audit logs verify, the app's daemon is gone."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.attacks.conftest import AttackRun
from tests.integration._session import LAUNCHER, in_pid_namespace, leftovers

pytestmark = pytest.mark.root


def test_both_sessions_left_nothing(attacks: AttackRun) -> None:
    for sid, summary in ((attacks.sid_a, attacks.summary_a), (attacks.sid_b, attacks.summary_b)):
        assert summary["teardown_errors"] == []
        assert leftovers(sid) == {}, sid


@pytest.mark.parametrize("which", ["a", "b"])
def test_the_audit_logs_verify(attacks: AttackRun, which: str) -> None:
    sid = attacks.sid_a if which == "a" else attacks.sid_b
    done = subprocess.run([*LAUNCHER, "verify-audit", str(attacks.audit_root / sid)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_daemon_the_app_left_behind_was_killed_at_teardown(attacks: AttackRun) -> None:
    """Double fork, setsid, SIGTERM/SIGHUP ignored: when the app ended, its pid namespace's init exited and
    the kernel killed every process of the namespace, the daemon with them (its pid is the namespace's: the
    host knows it by another number, so the test looks for any process left in the app's namespace)."""
    daemon = attacks.a.probes["linger.daemon"]
    assert daemon["pid_ns"].startswith("pid:[") and daemon["pid_ns"] != os.readlink("/proc/self/ns/pid")
    assert in_pid_namespace(daemon["pid_ns"]) == []
