"""gc: a session whose launcher was SIGKILLed is removed from its journal, a live one is left alone."""

from __future__ import annotations

import argparse
import contextlib
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from launcher.commands import gc as gc_command
from launcher.lifecycle.journal import JournalEntry
from launcher.lifecycle.journal_removers import process_alive, process_name
from launcher.lifecycle.sweep import collect

CGROUP_ROOTS = ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids")

# The "launcher": journals each resource, then creates it, then waits to be killed.
LAUNCHER = textwrap.dedent(
    """
    import os, socket, subprocess, sys, time
    from launcher.lifecycle.journal import Journal, process_name
    sid, sessions, run, user, group, netns, die_at = sys.argv[1:8]
    cgroups = sys.argv[8:]
    j = Journal.create(sid, sessions, allowed_roots=(run,))
    steps = []
    def do(kind, name, *argv):
        j.record(kind, name)
        steps.append(kind)
        if len(steps) == int(die_at):  # journaled, not yet created: the worst moment to die
            os.kill(os.getpid(), 9)
        if argv:
            subprocess.run(argv, check=True, capture_output=True)
    do("user", user, "useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user)
    do("group", group, "groupadd", "--system", "--users", user, group)
    do("netns", netns, "ip", "netns", "add", netns)
    for cg in cgroups:
        do("cgroup", cg, "mkdir", "-p", cg)
    do("dir", f"{run}/{sid}", "mkdir", "-p", f"{run}/{sid}/doors")
    sock_path = f"{run}/{sid}/doors/fs.sock"
    do("file", sock_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(sock_path)
    child = subprocess.Popen(["sleep", "600"], stdout=subprocess.DEVNULL)
    do("pid", process_name(child.pid))
    confined = subprocess.Popen(["sleep", "600"], stdout=subprocess.DEVNULL)
    for cg in cgroups:
        with open(f"{cg}/cgroup.procs", "w") as f:
            f.write(str(confined.pid))
    print(process_name(child.pid), process_name(confined.pid), flush=True)
    time.sleep(600)
    """
)


@dataclass
class Session:
    sid: str
    run: str
    user: str
    group: str
    netns: str
    cgroups: tuple[str, ...]
    launcher: subprocess.Popen[str] | None = None
    processes: tuple[str, ...] = ()


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def _netns_exists(name: str) -> bool:
    return os.path.exists(f"/run/netns/{name}")


def _scrub(session: Session) -> None:
    """Remove whatever a failed test left, whatever gc did or did not do."""
    if session.launcher is not None:
        session.launcher.kill()
        session.launcher.wait()
    for name in session.processes:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(name.split(":")[0]), signal.SIGKILL)
    subprocess.run(["userdel", session.user], capture_output=True, check=False)
    subprocess.run(["groupdel", session.group], capture_output=True, check=False)
    subprocess.run(["groupdel", session.user], capture_output=True, check=False)
    subprocess.run(["ip", "netns", "del", session.netns], capture_output=True, check=False)
    for cg in session.cgroups:
        for parent in (cg, os.path.dirname(cg)):
            with contextlib.suppress(OSError):
                os.rmdir(parent)


@pytest.fixture
def sessions_root() -> Iterator[tuple[str, str]]:
    """(sessions root, runtime root) in a short scratch dir (socket paths stay under 108 bytes)."""
    base = tempfile.mkdtemp(prefix="sharness-gc-")
    try:
        yield f"{base}/sessions", f"{base}/run"
    finally:
        shutil.rmtree(base, ignore_errors=True)


StartSession = Callable[..., Session]


@pytest.fixture
def new_session(sessions_root: tuple[str, str]) -> Iterator[StartSession]:
    made: list[Session] = []

    def start(die_at: int = 0) -> Session:
        sessions, run = sessions_root
        os.makedirs(run, exist_ok=True)
        sid = secrets.token_hex(4)
        cgroups = tuple(f"{root}/sharness/{sid}/app" for root in CGROUP_ROOTS)
        session = Session(sid, run, f"sh-test-{sid}-app", f"sh-test-{sid}-to-fs", f"sh-test-{sid}", cgroups)
        made.append(session)
        argv = [sys.executable, "-c", LAUNCHER, sid, sessions, run, session.user, session.group]
        argv += [session.netns, str(die_at), *cgroups]
        session.launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert session.launcher.stdout is not None
        session.processes = tuple(session.launcher.stdout.readline().split())
        if die_at:
            assert session.launcher.wait() == -signal.SIGKILL
        else:
            assert len(session.processes) == 2, "the test launcher failed before it was ready"
        return session

    try:
        yield start
    finally:
        for session in made:
            _scrub(session)


def _kill_launcher(session: Session) -> None:
    assert session.launcher is not None
    session.launcher.send_signal(signal.SIGKILL)
    session.launcher.wait()


def _leftovers(session: Session) -> list[str]:
    found = []
    found += [f"user {session.user}"] * _user_exists(session.user)
    found += [f"group {session.group}"] * _group_exists(session.group)
    found += [f"netns {session.netns}"] * _netns_exists(session.netns)
    found += [f"cgroup {cg}" for cg in session.cgroups if os.path.exists(cg)]
    found += [f"dir {session.run}/{session.sid}"] * os.path.lexists(f"{session.run}/{session.sid}")
    found += [f"process {name}" for name in session.processes if process_alive(name)]
    return found


@pytest.mark.root
def test_gc_removes_a_dead_session_and_leaves_a_live_one(
    new_session: StartSession, sessions_root: tuple[str, str]
) -> None:
    sessions, run = sessions_root
    dead, live = new_session(), new_session()
    assert len(_leftovers(dead)) == 8
    _kill_launcher(dead)

    report = collect(sessions, runtime_root=run, allowed_roots=(run,))

    assert report.errors == ()
    assert report.sessions_removed == (dead.sid,)
    assert report.sessions_live == (live.sid,)
    assert _leftovers(dead) == []
    assert not os.path.exists(f"{sessions}/{dead.sid}")
    per_kind = report.removed_per_kind()
    assert per_kind["user"] == [dead.user] and per_kind["netns"] == [dead.netns]
    assert per_kind["file"] == [f"{run}/{dead.sid}/doors/fs.sock"]
    assert sorted(per_kind["cgroup"]) == sorted(dead.cgroups)
    assert len(_leftovers(live)) == 8  # untouched: user, group, netns, 2 cgroups, dir, 2 processes
    assert os.listdir(f"{sessions}/{live.sid}") == ["journal"]

    _kill_launcher(live)
    assert collect(sessions, runtime_root=run, allowed_roots=(run,)).sessions_removed == (live.sid,)
    assert _leftovers(live) == []
    assert os.listdir(sessions) == []


@pytest.mark.root
@pytest.mark.parametrize("die_at", range(1, 9))
def test_gc_after_the_launcher_died_at_each_stage_of_creation(
    new_session: StartSession, sessions_root: tuple[str, str], die_at: int
) -> None:
    sessions, run = sessions_root
    session = new_session(die_at)
    report = collect(sessions, runtime_root=run, allowed_roots=(run,))
    assert report.errors == ()
    assert report.sessions_removed == (session.sid,)
    assert len(report.removed) == die_at
    assert _leftovers(session) == []
    assert os.listdir(sessions) == []


@pytest.mark.root
def test_gc_sweeps_debris_it_can_prove_is_from_a_session(sessions_root: tuple[str, str]) -> None:
    sessions, run = sessions_root
    os.makedirs(f"{run}/0123abcd/doors")
    os.makedirs(f"{run}/sh-not-a-session")
    os.makedirs(f"{sessions}/.new-89abcdef-4194304-1")  # creator (pid above pid_max) is dead
    Path(f"{sessions}/.new-89abcdef-4194304-1/journal").write_bytes(b"")
    me = process_name().replace(":", "-")
    os.makedirs(f"{sessions}/.new-fedcba98-{me}")  # creator is this live process
    os.makedirs(f"{sessions}/01234567")  # a teardown that stopped after unlinking its journal

    report = collect(sessions, runtime_root=run, allowed_roots=(run,))

    assert report.errors == ()
    assert report.removed == (JournalEntry("dir", f"{run}/0123abcd"),)
    assert report.sessions_removed == ("01234567",)
    assert sorted(os.listdir(run)) == ["sh-not-a-session"]
    assert os.listdir(sessions) == [f".new-fedcba98-{me}"]


@pytest.mark.root
def test_gc_names_what_it_could_not_remove(sessions_root: tuple[str, str]) -> None:
    sessions, run = sessions_root
    os.makedirs(f"{sessions}/0badf00d")
    Path(f"{sessions}/0badf00d/journal").write_text(
        '{"kind": "launcher", "name": "4194304:1"}\n{"kind": "dir", "name": "/etc/sh-never"}\n'
    )
    report = collect(sessions, runtime_root=run, allowed_roots=(run,))
    assert report.sessions_removed == ()
    assert [(e.sid, e.kind, e.name) for e in report.errors] == [("0badf00d", "dir", "/etc/sh-never")]
    assert "outside the sharness roots" in report.errors[0].detail
    assert os.path.exists(f"{sessions}/0badf00d/journal")  # kept for the next gc or a person


def _gc_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    gc_command.register(parser.add_subparsers())
    args = parser.parse_args(["gc", *argv])
    result: int = args.func(args)
    return result


def _dead_journal(sessions: str, sid: str, *entries: tuple[str, str]) -> None:
    os.makedirs(f"{sessions}/{sid}")
    lines = [{"kind": "launcher", "name": "4194304:1"}] + [{"kind": k, "name": n} for k, n in entries]
    Path(f"{sessions}/{sid}/journal").write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.root
def test_gc_command_prints_what_it_removed(
    sessions_root: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    sessions, run = sessions_root
    os.makedirs(f"{run}/0badc0de/doors")
    _dead_journal(sessions, "0badc0de", ("dir", f"{run}/0badc0de"))
    assert _gc_cli("--sessions-dir", sessions, "--runtime-dir", run) == 0
    out = capsys.readouterr().out
    assert out == f"gc: removed 1 dead session(s): 0badc0de\n  dir: {run}/0badc0de\n"
    assert _gc_cli("--sessions-dir", sessions, "--runtime-dir", run) == 0
    assert capsys.readouterr().out == "gc: nothing to remove\n"


@pytest.mark.root
def test_gc_command_exits_1_naming_what_is_left(
    sessions_root: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    sessions, run = sessions_root
    _dead_journal(sessions, "0badc0de", ("file", "/etc/sh-never"), ("dir", f"{run}/0badc0de"))
    assert _gc_cli("--json", "--sessions-dir", sessions, "--runtime-dir", run) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["sessions_removed"] == []
    assert report["removed"] == {"dir": [f"{run}/0badc0de"]}
    assert [(e["kind"], e["name"]) for e in report["errors"]] == [("file", "/etc/sh-never")]
    assert _gc_cli("--sessions-dir", sessions, "--runtime-dir", run) == 1
    err = capsys.readouterr().err
    assert "could not remove session 0badc0de: file /etc/sh-never: RemovalRefused: refusing" in err
