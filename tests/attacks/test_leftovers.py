"""After both sessions: nothing of theirs is left, the audit logs verify, the app's daemon is gone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.attacks.conftest import AttackRun
from tests.integration._session import LAUNCHER, leftovers

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


def _state(pid: int) -> tuple[str, int] | None:
    """(state letter, real uid) of a pid, or None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return fields["State"].split()[0], int(fields["Uid"].split()[0])


def test_a_daemon_the_app_left_behind_was_killed_at_teardown(attacks: AttackRun) -> None:
    """Double fork, setsid, SIGTERM/SIGHUP ignored: the cgroup kill at teardown ends it anyway (a zombie
    not yet reaped by init counts as ended; a reused pid has another uid)."""
    daemon = attacks.a.probes["linger.daemon"]
    state = _state(daemon["pid"])
    assert state is None or state[0] == "Z" or state[1] != daemon["uid"], state
