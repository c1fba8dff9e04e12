"""Attacks on sharness-launchd by a caller who is not root (docs/decisions/launchd.md, "attacks tried"): each
names, through the daemon, something root would open for it that the caller itself cannot reach."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _launchd import NOBODY, Daemon, Scratch, policy_document
from integration._session import leftovers, new_leftovers

from pki.vocabulary import EXIT_NOT_ROOT

pytestmark = [pytest.mark.root, pytest.mark.slow]

SECRET = "root-only-sentinel-7f3a"
_PROCESS = {"max_memory_mb": 256, "max_pids": 64}


@pytest.fixture
def scratch() -> Iterator[Scratch]:
    made = Scratch()
    try:
        yield made
    finally:
        made.remove()


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
