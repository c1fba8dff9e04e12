"""Session B's app fills its own memory and pids cgroup: the doors live in their own cgroups and keep
answering, the test's write (another client, outside B's cgroups) lands, and so does the app's own."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import FILL_PIDS, AttackRun

pytestmark = pytest.mark.root


def test_the_app_filled_its_cgroup(attacks: AttackRun) -> None:
    """Memory: a child allocated until the OOM killer took it (SIGKILL), then another held all but 16 MiB.
    Pids: sleepers until fork gave EAGAIN, the app and the holder counting against the same pids.max."""
    filled = attacks.b.probes["filled"]
    assert filled["oom_signal"] == 9 and filled["held_mb"] > 0, filled
    assert filled["fork_errno"] == "EAGAIN" and filled["sleepers"] + 2 == FILL_PIDS, filled


def test_another_clients_write_lands_while_the_app_cgroup_is_full(attacks: AttackRun) -> None:
    assert attacks.outside.fs_write["status"] == 201
    assert (attacks.workspace_b / "outside.txt").read_bytes() == b"written from outside while B was full\n"
    assert (attacks.workspace_b / "outside.txt").stat().st_uid == 65534


def test_the_apps_own_write_lands_on_its_kept_connection(attacks: AttackRun) -> None:
    assert attacks.b.probes["wrote"]["ok"] is True, attacks.b.probes["wrote"]
    assert (attacks.workspace_b / "during.txt").read_bytes() == b"written by the app while its cgroup was full\n"
    assert attacks.summary_b["exit_code"] == 0 and attacks.summary_b["reason"] == "app exited with code 0"
