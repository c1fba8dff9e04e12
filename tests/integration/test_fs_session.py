"""The fs door in a real session: the app's own write is refused by the kernel, the door's lands, rows hold."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

pytestmark = pytest.mark.root

# Runs confined as the app: tries the direct write, then the same write and the refused ones through the door.
APP = r"""
import errno, json, os
from doors.fs.client import DoorRefused, FsClient
ws = WORKSPACE
def report(name, **fields):
    print(json.dumps({"probe": name, **fields}), flush=True)
try:
    os.close(os.open(os.path.join(ws, "direct.txt"), os.O_WRONLY | os.O_CREAT, 0o644))
    report("direct", errno=0)
except OSError as exc:
    report("direct", errno=exc.errno)
with FsClient.from_env() as fs:
    report("door_write", answer=fs.write("a.txt", b"through the door\n"))
    for name, path, body in [
        ("read_only", ".git/config", b"x"),
        ("secret", "key.pem", b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"),
        ("escape", "../outside.txt", b"x"),
        ("too_big", "big.bin", b"x" * 2048),
    ]:
        try:
            fs.write(path, body)
            report(name, status=200)
        except DoorRefused as exc:
            report(name, status=exc.refusal.status, row=exc.refusal.row)
    fs.append("log", b"-----BEGIN OPENSSH PRIV")
    try:
        fs.append("log", b"ATE KEY-----\nb3BlbnNzaA==\n")
        report("split_key", status=200)
    except DoorRefused as exc:
        report("split_key", status=exc.refusal.status, row=exc.refusal.row)
"""


def test_app_write_refused_by_kernel_door_write_lands_rows_hold(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    app = APP.replace("WORKSPACE", repr(str(workspace)))
    document = basic_manifest(workspace, [sys.executable, "-c", app])
    document["doors"]["fs"].update({"read_only": [".git"], "max_file_bytes": 1024})  # type: ignore[index]
    document["app"]["files"]["read"] = [str(workspace)]  # type: ignore[index]  # visible, so Landlock must refuse
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
         str(tmp_path / "audit"), "--json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"probe"')]
    probes = {line["probe"]: line for line in lines}
    # EROFS: the workspace is the app's to read at most, bound read-only (Landlock behind it: test_landlock.py)
    assert probes["direct"]["errno"] == errno.EROFS
    assert not (workspace / "direct.txt").exists()
    assert (workspace / "a.txt").read_bytes() == b"through the door\n"
    landed = (workspace / "a.txt").stat()
    assert (landed.st_uid, landed.st_gid, landed.st_mode & 0o7777) == (65534, 65534, 0o644)
    assert probes["read_only"] == {"probe": "read_only", "status": 403, "row": "read_only"}
    assert probes["secret"]["row"] == "refuse_secrets" and not (workspace / "key.pem").exists()
    assert probes["escape"]["status"] in (400, 403)
    assert probes["too_big"] == {"probe": "too_big", "status": 413, "row": "max_file_bytes"}
    assert probes["split_key"]["row"] == "refuse_secrets"
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    out = done.stdout.splitlines()
    summary = json.loads("\n".join(out[out.index("{"):]))
    assert leftovers(summary["sid"]) == {}
    audit = Path(summary["audit_dir"], "audit.jsonl").read_text()
    events = [json.loads(line) for line in audit.splitlines()]
    fs_events = [e for e in events if e.get("event") == "door.event" and e.get("op")]
    assert {e["op"] for e in fs_events} >= {"write", "append"}
    assert all("through the door" not in json.dumps(e) for e in events)  # no content in the audit log
