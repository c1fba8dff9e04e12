"""gc removes what carries a session's name when its journal is lost entirely, and nothing else."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from launcher.kernel import cgroups, netns, users
from launcher.lifecycle import sweep, sweep_lock, sweep_orphans
from launcher.lifecycle.create import remove_empty_roots
from launcher.lifecycle.journal import Journal, RemovalError
from launcher.lifecycle.sweep_orphans import find_orphans
from pki.vocabulary import RUN_ROOT, SESSIONS_ROOT


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


def _waits_for_the_creation_lock(pid: int, directory: str) -> bool:
    """/proc/locks lists a blocked shared flock (`->`) of `pid` on `directory`: the creator waits on the sweep."""
    info = os.stat(directory)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    with open("/proc/locks") as locks:
        return any("->" in line and "FLOCK" in line and " READ " in line and f" {pid} " in line
                   and line.split()[-3] == inode for line in locks)


def _create_while_sweeping(sid: str, listed: threading.Event, created: threading.Event) -> Journal:
    """A session's creation as SessionBuilder.build does it: journal first, then under the creation lock."""
    listed.wait()
    journal = Journal.create(sid)
    with sweep_lock.creating(SESSIONS_ROOT):
        journal.record("netns", f"sh-{sid}-app")
        netns.create_netns(f"sh-{sid}-app", loopback_up=True)
    created.set()
    return journal


@pytest.mark.root
def test_the_sweep_never_takes_a_session_created_between_its_listing_and_its_scan() -> None:
    """The sweep lists the journals, pauses; a session journals and creates; the sweep scans and removes."""
    sid = "cafe" + os.urandom(2).hex()
    listed, resume, created = threading.Event(), threading.Event(), threading.Event()
    journals: list[Journal] = []

    def pause() -> None:
        listed.set()
        resume.wait()

    reports: list[sweep.GcReport] = []
    sweeper = threading.Thread(target=lambda: reports.append(sweep.collect(after_listing=pause)))
    creator = threading.Thread(target=lambda: journals.append(_create_while_sweeping(sid, listed, created)))
    sweeper.start()
    creator.start()
    try:
        listed.wait()
        while not created.is_set() and not _waits_for_the_creation_lock(os.getpid(), SESSIONS_ROOT):
            created.wait(0.01)
        resume.set()
        sweeper.join()
        creator.join()
        assert sid not in reports[0].sessions_removed, reports[0]
        assert os.path.exists(f"/run/netns/sh-{sid}-app"), "the sweep removed a live session's netns"
    finally:
        resume.set()
        sweeper.join()
        creator.join()
        errors: list[RemovalError] = []
        for journal in journals:
            journal.teardown(errors)
        netns.delete_netns(f"sh-{sid}-app")
        remove_empty_roots(SESSIONS_ROOT, RUN_ROOT)  # as the session's own teardown ends
        assert not errors


@pytest.mark.root
def test_a_starting_launcher_skips_the_journalless_sweep_while_a_session_is_being_created() -> None:
    os.makedirs(SESSIONS_ROOT, exist_ok=True)
    try:
        with sweep_lock.creating(SESSIONS_ROOT):
            report = sweep.collect(wait=False)
    finally:
        remove_empty_roots(SESSIONS_ROOT, RUN_ROOT)
    assert report.journalless_skipped and report.to_json()["journalless_skipped"] is True
