"""`systemctl reload sharness-launchd` (SIGHUP): the policy is read again. Requests from then on are judged by the
new one, a running session keeps going, and a policy that will not load (or no longer has the pinned hash) is
refused and audited while the one in force stays."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest
from _launchd import DAEMON_UID, NOBODY, Daemon, Scratch, policy_document

pytestmark = [pytest.mark.root, pytest.mark.slow]

SLEEPER = ["/bin/sh", "-c", "echo started; exec sleep 600"]


def _started(daemon: Daemon) -> dict[str, Any]:
    """The daemon's launchd.start event, once its loop runs (its socket listens a moment before)."""
    assert daemon.process is not None
    deadline = time.monotonic() + 30
    while not (starts := [record for record in daemon.audit_events()
                          if record["event"] == "launchd.start" and record["pid"] == daemon.process.pid]):
        assert time.monotonic() < deadline, "the daemon's loop did not start"
        time.sleep(0.02)
    return starts[-1]


def _reload(daemon: Daemon, policy: dict[str, Any] | bytes, event: str) -> dict[str, Any]:
    """Write `policy`, send SIGHUP, and wait for the daemon to audit `event` (the newest of that name)."""
    _started(daemon)
    seen = sum(1 for record in daemon.audit_events() if record["event"] == event)
    daemon.policy_path.write_bytes(policy if isinstance(policy, bytes) else json.dumps(policy).encode())
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 30
    while True:
        records = [record for record in daemon.audit_events() if record["event"] == event]
        if len(records) > seen:
            return records[-1]
        assert daemon.process.poll() is None, "the daemon ended on SIGHUP"
        assert time.monotonic() < deadline, f"no {event} after SIGHUP"
        time.sleep(0.05)


def test_a_reload_judges_new_requests_by_the_new_policy_and_keeps_a_running_session(scratch: Scratch) -> None:
    daemon = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 1})).start()
    try:
        theirs = scratch.workspace("theirs", DAEMON_UID)
        true_manifest, true_digest = scratch.manifest("true", theirs, ["/bin/true"])
        refused = daemon.run(DAEMON_UID, str(true_manifest), "--expect-hash", true_digest)
        assert refused.returncode == 77 and f"uid {DAEMON_UID} is not a principal" in refused.stderr

        mine = scratch.workspace("mine", NOBODY)
        sleeper_manifest, sleeper_digest = scratch.manifest("sleeper", mine, SLEEPER)
        sleeper = daemon.client(NOBODY, str(sleeper_manifest), "--expect-hash", sleeper_digest)
        sid = daemon.wait_for_sid(NOBODY, "sleeper")

        before = daemon.policy_path.read_bytes()
        reloaded = _reload(daemon, policy_document({"uid": DAEMON_UID, "max_sessions": 1}), "launchd.policy_reloaded")
        assert reloaded["from"] != reloaded["to"] and before != daemon.policy_path.read_bytes()

        allowed = daemon.run(DAEMON_UID, str(true_manifest), "--expect-hash", true_digest)
        assert allowed.returncode == 0, allowed.stderr
        assert [session["sid"] for session in daemon.ps(NOBODY)] == [sid]  # admitted under the old policy: running
        again = daemon.run(NOBODY, str(sleeper_manifest), "--expect-hash", sleeper_digest)
        assert again.returncode == 77 and f"uid {NOBODY} is not a principal" in again.stderr

        stopped = daemon.run(NOBODY, "stop", sid)
        assert stopped.returncode == 0, stopped.stderr
        sleeper.communicate(timeout=120)
    finally:
        daemon.stop()


@pytest.mark.parametrize(("policy", "words"), [
    (b'{"sharness": "launchd/v0", "limits": {"max_sessions": 8}, "principals": [', "JSON"),
    (json.dumps({"sharness": "launchd/v0", "limits": {"max_sessions": 8},
                 "principals": [{"uid": DAEMON_UID, "shell": True}]}).encode(), "/principals/0"),
], ids=["not-json", "unknown-row"])
def test_a_policy_that_will_not_load_is_refused_and_the_one_in_force_stays(scratch: Scratch, policy: bytes,
                                                                          words: str) -> None:
    daemon = Daemon(scratch, policy_document({"uid": DAEMON_UID, "max_sessions": 1})).start()
    try:
        refused = _reload(daemon, policy, "launchd.policy_reload_refused")
        assert refused["kept"] == _started(daemon)["policy"]
        assert words in f"{refused['pointer']} {refused['message']}", refused
        assert refused["hint"]
        theirs = scratch.workspace("theirs", DAEMON_UID)
        manifest, digest = scratch.manifest("true", theirs, ["/bin/true"])
        allowed = daemon.run(DAEMON_UID, str(manifest), "--expect-hash", digest)
        assert allowed.returncode == 0, allowed.stderr
    finally:
        err = daemon.stop()
    assert "launchd.policy_reload_refused" in err


def test_a_pinned_policy_hash_holds_for_the_daemons_life(scratch: Scratch) -> None:
    first = policy_document({"uid": DAEMON_UID, "max_sessions": 1})
    probe = Daemon(scratch, first).start()
    pinned = _started(probe)["policy"]
    probe.stop()
    daemon = Daemon(scratch, first, "--expect-policy-hash", pinned).start()
    try:
        refused = _reload(daemon, policy_document({"uid": NOBODY, "max_sessions": 1}), "launchd.policy_reload_refused")
        assert refused["kept"] == pinned and "--expect-policy-hash" in refused["hint"]
        same = _reload(daemon, first, "launchd.policy_reloaded")  # the pinned policy put back loads again
        assert same["from"] == same["to"] == pinned
    finally:
        daemon.stop()
