"""sharness-launchd for real: root starts the daemon, callers are other uids. A session runs with the caller's
stdio and gives its exit code back; each refusal creates nothing and is audited; two callers cannot see or stop
each other's sessions; a client or a daemon killed mid-session leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _launchd import DAEMON_UID, LAUNCH, NOBODY, Daemon, Scratch, policy_document
from integration._session import leftovers, new_leftovers

pytestmark = [pytest.mark.root, pytest.mark.slow]

SLEEPER = ["/bin/sh", "-c", "echo started; exec sleep 600"]


@pytest.fixture
def daemon(scratch: Scratch) -> Iterator[Daemon]:
    running = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 2},
                                              {"uid": DAEMON_UID, "max_sessions": 2})).start()
    try:
        yield running
    finally:
        running.stop()


def _wait_until(predicate, timeout_s: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_caller_runs_a_session_with_its_own_stdio_and_gets_its_exit_code(daemon: Daemon, scratch: Scratch,
                                                                           tmp_path: Path) -> None:
    before = leftovers()
    ws = scratch.workspace("ws", NOBODY)
    manifest, digest = scratch.manifest("stdio", ws, ["/bin/sh", "-c", "read line; echo got:$line; echo to-err >&2; "
                                                                       "id -u; exit 7"])
    process = daemon.client(NOBODY, str(manifest), "--expect-hash", digest, stdin=subprocess.PIPE)
    out, err = process.communicate("hello\n", timeout=120)
    assert process.returncode == 7, err
    lines = out.splitlines()
    assert lines[0] == "got:hello" and lines[1] != str(NOBODY)  # the app's own uid, not the caller's
    assert "to-err" in err and "asking sharness-launchd" in err and "ended: app exited with code 7" in err
    allowed = daemon.requests("allowed")
    assert [(event["op"], event["uid"]) for event in allowed] == [("run", NOBODY)]
    ends = [event for event in daemon.audit_events() if event["event"] == "launchd.end"]
    assert ends and ends[0]["exit_code"] == 7 and ends[0]["uid"] == NOBODY
    assert new_leftovers(before) == {}


def _refused(daemon: Daemon, uid: int, manifest: Path, digest: str) -> subprocess.CompletedProcess[str]:
    done = daemon.run(uid, str(manifest), "--expect-hash", digest)
    assert "sharness-launchd refused" in done.stderr, done.stderr
    return done


def test_each_refusal_names_its_row_creates_nothing_and_is_audited(daemon: Daemon, scratch: Scratch) -> None:
    before = leftovers()
    mine = scratch.workspace("mine", NOBODY)
    theirs = scratch.workspace("theirs", DAEMON_UID)
    hidden = scratch.path / "hidden"
    hidden.mkdir(mode=0o700)  # root's: nobody cannot enter it, though root (the daemon) can
    (hidden / "notes").write_text("x")
    os.chmod(hidden / "notes", 0o644)
    secret = {"keys": {"secrets": {"api": {"from": "sealed:api", "roles": ["net"], "hosts": ["api.example"]}}}}
    cases = [
        (scratch.manifest("ok", mine, ["/bin/true"]), "sha256:" + "1" * 64, NOBODY, 125, "hash mismatch"),
        (scratch.manifest("ok", mine, ["/bin/true"]), None, 2, 77, "uid 2 is not a principal"),
        (scratch.manifest("theirs", theirs, ["/bin/true"]), None, NOBODY, 77, "manifest row /workspace"),
        (scratch.manifest("hidden", mine, ["/bin/true"],
                          app={"argv": ["/bin/true"], "files": {"read": [str(hidden / "notes")], "exec": []},
                               "process": {"max_memory_mb": 256, "max_pids": 64}}),
         None, NOBODY, 77, "manifest row /app/files/read/0"),
        (scratch.manifest("secret", mine, ["/bin/true"],
                          doors={"fs": {"refuse_secrets": True, "max_file_bytes": 1048576,
                                        "max_total_bytes": 16777216, "max_files": 1000},
                                 "net": {"allow": {"app": ["api.example:443"]}}, **secret},
                          edges=[["app", "fs"], ["app", "net"], ["net", "keys"]]),
         None, NOBODY, 77, "manifest row /doors/keys/secrets/api/from"),
        (scratch.manifest("long", mine, ["/bin/true"],
                          session={"name": "long", "trust_domain": "t.sharness.test", "ttl_s": 86400}),
         None, NOBODY, 77, "manifest row /session/ttl_s"),
    ]
    for (manifest, digest), sent, uid, code, words in cases:
        done = _refused(daemon, uid, manifest, sent or digest)
        assert done.returncode == code and words in done.stderr, (words, done.stderr)
    refused = daemon.requests("refused")
    assert len(refused) == len(cases) and not daemon.requests("allowed")
    assert {event["row"] for event in refused} >= {"/workspace", "/app/files/read/0", "/doors/keys/secrets/api/from"}
    assert new_leftovers(before) == {}


def test_two_callers_see_and_stop_only_their_own_sessions(daemon: Daemon, scratch: Scratch) -> None:
    before = leftovers()
    clients = {}
    for uid, name in ((NOBODY, "nobodys"), (DAEMON_UID, "daemons")):
        manifest, digest = scratch.manifest(name, scratch.workspace(name, uid), SLEEPER)
        clients[uid] = daemon.client(uid, str(manifest), "--expect-hash", digest)
    sid_n = daemon.wait_for_sid(NOBODY, "nobodys")
    sid_d = daemon.wait_for_sid(DAEMON_UID, "daemons")
    assert [s["sid"] for s in daemon.ps(NOBODY)] == [sid_n]
    assert [s["sid"] for s in daemon.ps(DAEMON_UID)] == [sid_d]
    assert {s["sid"] for s in daemon.ps(0)} == {sid_n, sid_d}  # root sees all
    for uid, other in ((NOBODY, sid_d), (DAEMON_UID, sid_n)):
        for command in ("stop", "logs"):
            done = daemon.run(uid, command, other)
            assert done.returncode == 1 and f"no session {other} of yours" in done.stderr
    assert all(client.poll() is None for client in clients.values())  # neither was stopped by the other
    assert daemon.run(NOBODY, "stop", sid_n).returncode == 0
    assert daemon.run(0, "stop", sid_d).returncode == 0  # root stops anyone's
    for client in clients.values():
        out, err = client.communicate(timeout=120)
        assert client.returncode == 128 + signal.SIGTERM and "received SIGTERM" in err, err
        assert out.startswith("started")
    logs = daemon.run(NOBODY, "logs", sid_n)
    assert logs.returncode == 0 and '"event":"session.end"' in logs.stdout.replace(" ", "")
    assert new_leftovers(before) == {}


def test_a_client_killed_mid_session_ends_it_and_nothing_is_left(daemon: Daemon, scratch: Scratch) -> None:
    before = leftovers()
    manifest, digest = scratch.manifest("killed", scratch.workspace("killed", NOBODY), SLEEPER)
    client = daemon.client(NOBODY, str(manifest), "--expect-hash", digest)
    sid = daemon.wait_for_sid(NOBODY, "killed")
    client.kill()
    client.communicate(timeout=30)
    _wait_until(lambda: not daemon.ps(0))
    stops = [event for event in daemon.audit_events() if event["event"] == "launchd.stop_session"]
    assert stops and stops[0]["sid"] == sid and "client" in stops[0]["why"]
    assert new_leftovers(before) == {}


def test_the_daemon_killed_mid_session_and_restarted_sweeps_everything(scratch: Scratch) -> None:
    before = leftovers()
    policy = policy_document({"uid": NOBODY, "max_sessions": 2})
    first = Daemon(scratch, policy).start()
    manifest, digest = scratch.manifest("orphan", scratch.workspace("orphan", NOBODY), SLEEPER)
    client = first.client(NOBODY, str(manifest), "--expect-hash", digest)
    sid = first.wait_for_sid(NOBODY, "orphan")
    first.stop(signal.SIGKILL)
    _, err = client.communicate(timeout=60)
    assert client.returncode != 0 and "closed the connection" in err, err
    assert Path(f"/run/sharness/sessions/{sid}").exists()  # no one tore it down: the runner died with the daemon
    second = Daemon(scratch, policy).start()  # its start sweeps what the dead daemon's session left
    left, journal_left = leftovers(sid), Path(f"/run/sharness/sessions/{sid}").exists()
    err = second.stop()
    assert all(not names for names in left.values()) and not journal_left, (left, err)
    # Its sweep's line names the session it removed, unless another launcher's start-up sweep on this machine
    # (every `sharness-launch run` sweeps) got there first: either way nothing is left.
    assert '"event":"launchd.sweep"' in err
    assert new_leftovers(before) == {}


def test_the_daemons_own_audit_log_verifies_against_its_registered_key(scratch: Scratch) -> None:
    daemon = Daemon(scratch, policy_document({"uid": NOBODY})).start()
    manifest, digest = scratch.manifest("refused", scratch.workspace("refused", DAEMON_UID), ["/bin/true"])
    assert daemon.run(NOBODY, str(manifest), "--expect-hash", digest).returncode == 77
    daemon.stop()
    (log_dir,) = (scratch.path / "state" / "audit").iterdir()
    verdict = subprocess.run([LAUNCH, "verify-audit", str(log_dir)], capture_output=True, text=True)
    assert verdict.returncode == 0 and verdict.stdout.startswith("intact"), verdict.stdout + verdict.stderr
    assert "unverified" not in verdict.stdout + verdict.stderr
    events = [event["event"] for event in daemon.audit_events()]
    assert events[1] == "launchd.start" and "launchd.request" in events and events[-2] == "launchd.stop"


def test_sigterm_ends_each_session_in_start_order_then_the_daemon(scratch: Scratch) -> None:
    before = leftovers()
    daemon = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 2},
                                             {"uid": DAEMON_UID, "max_sessions": 2})).start()
    clients, sids = [], []
    for uid, name in ((NOBODY, "first"), (DAEMON_UID, "second")):
        manifest, digest = scratch.manifest(name, scratch.workspace(name, uid), SLEEPER)
        clients.append(daemon.client(uid, str(manifest), "--expect-hash", digest))
        sids.append(daemon.wait_for_sid(uid, name))  # the second starts once the first runs: a known order
    err = daemon.stop(signal.SIGTERM)
    assert daemon.process is not None and daemon.process.returncode == 0, err
    for client in clients:
        _, client_err = client.communicate(timeout=120)
        assert client.returncode == 128 + signal.SIGTERM and "received SIGTERM" in client_err, client_err
    events = daemon.audit_events()
    order = [(event["event"], event["sid"]) for event in events
             if event["event"] in ("launchd.stop_session", "launchd.end")]
    # in start order, each one ended before the next is asked to end
    assert order == [("launchd.stop_session", sids[0]), ("launchd.end", sids[0]),
                     ("launchd.stop_session", sids[1]), ("launchd.end", sids[1])], order
    assert events[-2]["event"] == "launchd.stop"
    assert new_leftovers(before) == {}
