"""session.max_audit_mb in a real session: an app that makes requests in a loop cannot fill the audit disk; the
session ends (fail closed) once its log holds the cap, and the log is whole, signed and verifiable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pki.vocabulary import EXIT_FAIL_CLOSED
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

pytestmark = [pytest.mark.root, pytest.mark.slow]

# Each stat is one audited request (and each refused path one more): 40 000 of them write far more than 1 MiB.
APP = r"""
from doors.fs.client import DoorRefused, FsClient
with FsClient.from_env() as fs:
    for n in range(40000):
        try:
            fs.stat(f"missing-{n}")
        except DoorRefused:
            pass
print("app: the loop ended", flush=True)
"""


def test_a_request_loop_ends_the_session_at_its_audit_cap(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, "-c", APP])
    document["session"]["max_audit_mb"] = 1  # type: ignore[index]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                           "--audit-dir", str(tmp_path / "audit"), "--json"],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == EXIT_FAIL_CLOSED, (done.returncode, done.stderr[-2000:])
    assert "app: the loop ended" not in done.stdout
    assert "session.max_audit_mb (1 MiB)" in done.stderr + done.stdout
    (log,) = (tmp_path / "audit").glob("*/audit.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    full = [event for event in events if event["event"] == "session.audit_full"]
    assert len(full) == 1 and full[0]["max_audit_mb"] == 1
    requests = [event for event in events if event.get("event") == "door.event" and event.get("role") == "fs"]
    assert len(requests) > 1000  # the loop ran, and each request it made before the end is there
    # Past the cap only by what one round read and the teardown wrote.
    assert log.stat().st_size < 2 * 1024 * 1024
    verify = subprocess.run([*LAUNCHER, "verify-audit", str(log.parent)], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert not any(leftovers(log.parent.name).values())
