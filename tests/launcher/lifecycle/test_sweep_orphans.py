"""gc removes what carries a session's name when its journal is lost entirely, and nothing else."""

from __future__ import annotations

import os
import subprocess

import pytest

from launcher.kernel import cgroups, netns, users
from launcher.lifecycle import sweep, sweep_orphans
from launcher.lifecycle.sweep_orphans import find_orphans


def test_find_orphans_keeps_known_sessions_and_foreign_names() -> None:
    orphans = find_orphans(
        ["sh-deadbeef-app", "sh-deadbeef-to-fs", "sh-0123abcd-app", "sh-test-x", "alice", "sh-DEADBEEF-app"],
        ["sh-deadbeef-app", "sh-0123abcd-shell", "sh-test-net-1"],
        ["/sys/fs/cgroup/memory/sharness/deadbeef/app", "/sys/fs/cgroup/pids/sharness/0123abcd/app"],
        known_sids={"0123abcd"},
    )
    assert orphans.accounts == ("sh-deadbeef-app", "sh-deadbeef-to-fs")
    assert orphans.netns == ("sh-deadbeef-app",)
    assert orphans.cgroups == ("/sys/fs/cgroup/memory/sharness/deadbeef/app",)
    assert orphans.sids() == {"deadbeef"}


@pytest.mark.root
def test_gc_removes_a_journalless_sessions_user_netns_and_cgroup() -> None:
    sid = "dead" + os.urandom(2).hex()
    name = f"sh-{sid}-app"
    try:
        users.create_accounts([name], {f"sh-{sid}-to-fs": [name]})
        netns.create_netns(name, loopback_up=True)
        handle = cgroups.create_cgroup(sid, "app", 64 * 1024 * 1024, 8)
        assert sid in sweep_orphans.scan(set()).sids()
        report = sweep.collect()
        assert sid in report.sessions_removed, report
        assert subprocess.run(["getent", "passwd", name], capture_output=True).returncode == 2
        assert subprocess.run(["getent", "group", f"sh-{sid}-to-fs"], capture_output=True).returncode == 2
        assert not os.path.exists(f"/run/netns/{name}")
        assert not any(os.path.exists(path) for path in handle.paths)
    finally:
        users.delete_accounts([name, f"sh-{sid}-to-fs"])
        netns.delete_netns(name)
        for path in cgroups.cgroup_paths(sid, "app"):
            cgroups.delete_cgroup(path)
