"""Attacks on sharness-launchd by a caller who is not root (docs/decisions/launchd.md, "attacks tried"): each
names, through the daemon, something root would open for it that the caller itself cannot reach."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import as_user
import pytest
from _launchd import DAEMON_UID, NOBODY, Daemon, Scratch, caller_reach, policy_document
from integration._session import leftovers, new_leftovers

from launcher.daemon.deputy import Caller, judge_reach
from launcher.daemon.server import MAX_PENDING
from launcher.manifest import load_manifest
from pki.vocabulary import EXIT_NOT_ROOT, EXIT_UNHELD

pytestmark = [pytest.mark.root, pytest.mark.slow]

SECRET = "root-only-sentinel-7f3a"
_PROCESS = {"max_memory_mb": 256, "max_pids": 64}


@pytest.fixture
def daemon(scratch: Scratch) -> Iterator[Daemon]:
    running = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 2})).start()
    try:
        yield running
    finally:
        running.stop()


def _roots_own(scratch: Scratch) -> Path:
    """A directory of root's, 0700, holding a 0600 file of root's: nobody can reach neither."""
    hidden = scratch.path / "roots-settings"
    hidden.mkdir(mode=0o700)
    (hidden / "token").write_text(SECRET)
    os.chmod(hidden / "token", 0o600)
    return hidden


def test_a_home_seed_of_roots_is_refused_not_copied_into_the_callers_app(daemon: Daemon, scratch: Scratch) -> None:
    # Without the home seed in the deputy's rule, root copies /…/roots-settings into the app's HOME and the
    # app (the caller's own program, its stdout the caller's) prints root's token.
    before = leftovers()
    hidden = _roots_own(scratch)
    ws = scratch.workspace("ws", NOBODY)
    argv = ["/bin/sh", "-c", 'cat "$HOME/token"; echo; exit 0']
    app = {"argv": argv, "files": {"read": [], "exec": []},
           "home_seed": str(hidden), "process": _PROCESS}
    manifest, digest = scratch.manifest("seed", ws, argv, app=app)
    done = daemon.run(NOBODY, str(manifest), "--expect-hash", digest)
    assert SECRET not in done.stdout, "root's file reached the caller through app.home_seed"
    assert done.returncode == EXIT_NOT_ROOT and "manifest row /app/home_seed" in done.stderr, done.stderr
    assert new_leftovers(before) == {}


def test_a_home_seed_the_caller_owns_is_copied(daemon: Daemon, scratch: Scratch) -> None:
    seed = scratch.workspace("settings", NOBODY)
    (seed / "token").write_text("the-callers-own")
    os.chown(seed / "token", NOBODY, NOBODY)
    ws = scratch.workspace("ws", NOBODY)
    argv = ["/bin/sh", "-c", 'cat "$HOME/token"']
    app = {"argv": argv, "files": {"read": [], "exec": []},
           "home_seed": str(seed), "process": _PROCESS}
    manifest, digest = scratch.manifest("seed-ok", ws, argv, app=app)
    done = daemon.run(NOBODY, str(manifest), "--expect-hash", digest)
    assert done.returncode == 0 and "the-callers-own" in done.stdout, done.stderr


def test_shell_door_files_the_caller_cannot_read_are_refused(daemon: Daemon, scratch: Scratch) -> None:
    # The shell door binds doors.shell.files into its commands' root as root: the caller's agent would `cat` it.
    hidden = _roots_own(scratch)
    ws = scratch.workspace("ws", NOBODY)
    doors = {"fs": {"refuse_secrets": True, "max_file_bytes": 1048576, "max_total_bytes": 16777216,
                    "max_files": 1000},
             "shell": {"workspace": "none", "files": {"read": [str(hidden / "token")]}}}
    manifest, digest = scratch.manifest("shellread", ws, ["/bin/true"], doors=doors,
                                        edges=[["app", "fs"], ["app", "shell"]])
    done = daemon.run(NOBODY, str(manifest), "--expect-hash", digest)
    assert done.returncode == EXIT_NOT_ROOT and "manifest row /doors/shell/files/read/0" in done.stderr, done.stderr


_RUN_AS_THE_DAEMONS_RUNNER = """
import argparse, sys
from launcher.commands.run import run
manifest, digest, uid, audit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.exit(run(argparse.Namespace(manifest=manifest, expect_hash=digest, best_effort=False, audit_dir=audit,
                                json=False, via_daemon=False, on_journaled=None, caller_uid=uid)))
"""


def _runner(manifest: Path, digest: str, caller: int) -> subprocess.CompletedProcess[str]:
    """The launcher as the daemon's runner calls it once the checker admitted `caller` (its audit beside the
    manifest, in the test's scratch)."""
    audit = str(manifest.parent / "audit")
    return subprocess.run([sys.executable, "-c", _RUN_AS_THE_DAEMONS_RUNNER, str(manifest), digest, str(caller), audit],
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_workspace_swapped_for_anothers_after_the_check_is_refused_by_the_launcher(scratch: Scratch) -> None:
    # In a directory the caller may rename in (0777, no sticky bit: a shared project directory), the checker,
    # as the caller, sees the caller's own workspace; the caller then renames it away and renames another
    # user's project into its place (a rename in one directory needs only write on it). No symlink is on the
    # way, so the launcher's no-symlink pinning alone does not see it: the fs door would run as the other user.
    before = leftovers()
    shared = scratch.path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    ws = shared / "ws"
    ws.mkdir()
    os.chown(ws, NOBODY, NOBODY)
    theirs = shared / "theirs"
    theirs.mkdir()
    os.chown(theirs, DAEMON_UID, DAEMON_UID)
    manifest, digest = scratch.manifest("swap", ws, ["/bin/true"])
    reach = caller_reach(Caller(NOBODY, NOBODY, frozenset({NOBODY}), os.getpid()), [str(ws)])
    assert judge_reach(load_manifest(manifest.read_bytes()), Caller(NOBODY, NOBODY, frozenset({NOBODY}), 0),
                       reach) is None  # the checker admits it
    swap = f"mv {ws} {shared}/mine && mv {theirs} {ws}"
    subprocess.run([*as_user.argv(NOBODY), "/bin/sh", "-c", swap], check=True)
    assert ws.stat().st_uid == DAEMON_UID
    done = _runner(manifest, digest, NOBODY)
    assert done.returncode == EXIT_UNHELD and "changed after sharness-launchd checked it" in done.stderr, done.stderr
    assert _runner(manifest, digest, DAEMON_UID).returncode == 0  # its owner's own request runs
    assert new_leftovers(before) == {}


def test_a_home_seed_swapped_for_roots_after_the_check_is_refused_by_the_launcher(scratch: Scratch) -> None:
    hidden = _roots_own(scratch)
    ws = scratch.workspace("ws", NOBODY)
    app = {"argv": ["/bin/true"], "files": {"read": [], "exec": []}, "home_seed": str(hidden), "process": _PROCESS}
    manifest, digest = scratch.manifest("seedswap", ws, ["/bin/true"], app=app)
    done = _runner(manifest, digest, NOBODY)  # as if root's directory was renamed in after the checker looked
    assert done.returncode == EXIT_UNHELD and "/app/home_seed" in done.stderr and "not the caller's" in done.stderr, \
        done.stderr


_HOLD_CONNECTIONS = """
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sys.argv[1])
    conn.send(b"\\0")  # a request begun, never finished: pending until its deadline
    held.append(conn)
print("held", flush=True)
sys.stdin.read()
"""


def test_one_user_holding_half_sent_requests_does_not_shut_out_another(scratch: Scratch) -> None:
    # The socket is 0666: without a cap per uid, nobody's 64 half-sent requests fill MAX_PENDING and every other
    # caller is refused until their deadline (here long, so the test does not depend on how fast it runs).
    policy = policy_document({"uid": NOBODY, "max_sessions": 2}, {"uid": DAEMON_UID, "max_sessions": 2})
    daemon = Daemon(scratch, policy, "--request-deadline-s", "600").start()
    holder = subprocess.Popen([*as_user.argv(NOBODY), sys.executable, "-c", _HOLD_CONNECTIONS, str(daemon.socket),
                               str(MAX_PENDING)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = daemon.run(DAEMON_UID, "ps", "--json")
        assert done.returncode == 0, done.stderr
    finally:
        holder.kill()
        holder.wait()
        daemon.stop()
