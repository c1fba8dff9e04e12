"""A door killed mid-upload leaves nothing in the person's workspace. The app starts 20 uploads of 4 MiB and
sends half of each; the test then SIGKILLs the fs door. Before, each body sat in a named `.sh-fs-*.tmp` file
beside its target: 40 MiB of hidden files stayed that no later session could name (the names are the door's)
or remove. Held by the fs door and the kernel: a body arrives in an O_TMPFILE file, which has no name until
the commit links it, so the kernel frees it when the door's fds close, however the door ends. Where the file
system has no O_TMPFILE the door falls back to named files, and every start sweeps the door's temporary names
(the leftovers of older versions, or of the fallback) before it answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attacks._live import LiveSession
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import basic_manifest, leftovers, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent
MIB = 1024 * 1024
UPLOADS, DECLARED, SENT = 20, 4 * MIB, 2 * MIB
PLANTED = (".sh-fs-00112233445566aa.tmp", "sub/.sh-fs-00112233445566bb.tmp")


def _door_pid(sid: str) -> int:
    return int((Path("/sys/fs/cgroup/pids/sharness") / sid / "fs" / "cgroup.procs").read_text().split()[0])


def _held_bytes(pid: int, workspace: Path) -> int:
    """What the door holds open in regular files of the workspace, named or not (O_TMPFILE: "(deleted)")."""
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(f"{workspace}/"):
                held += os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            continue
    return held


def _until_held(pid: int, workspace: Path, wanted: int, timeout_s: float = 120.0) -> int:
    deadline = time.monotonic() + timeout_s
    while (held := _held_bytes(pid, workspace)) < wanted:
        assert time.monotonic() < deadline, f"the door holds {held} bytes of the bodies, not {wanted}"
        time.sleep(0.05)
    return held


def _session(root: Path, argv: list[str]) -> LiveSession:
    manifest = basic_manifest(root / "ws", argv)
    manifest["doors"]["fs"].update({"max_file_bytes": 8 * MIB, "max_total_bytes": 256 * MIB,  # type: ignore[index]
                                    "max_concurrent_uploads": UPLOADS})
    return LiveSession(write_manifest(root, manifest), root / "audit", root / "stderr")


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sh-test-killed-", dir=SCRATCH_PARENT))
    path.chmod(0o755)
    (path / "ws" / "sub").mkdir(parents=True)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def _tree(workspace: Path) -> list[str]:
    return sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*"))


def test_a_door_killed_mid_upload_leaves_nothing_in_the_workspace(root: Path) -> None:
    workspace = root / "ws"
    live = _session(root, [sys.executable, str(HERE / "killed_uploads_app.py"), str(UPLOADS), str(DECLARED),
                           str(SENT)])
    try:
        sid = live.wait_probe("ready")["sid"]
        live.send("stall")
        assert live.wait_probe("stalled", timeout_s=120)["uploads"] == UPLOADS
        pid = _door_pid(sid)
        held = _until_held(pid, workspace, UPLOADS * SENT)  # every body is in the door's hands
        in_flight = _tree(workspace)
        os.kill(pid, signal.SIGKILL)
        summary = live.finish(timeout_s=120)
    finally:
        live.stop()
    assert summary["exit_code"] == 70, summary  # a door that dies ends the session, fail closed
    assert held >= UPLOADS * SENT
    assert _tree(workspace) == ["sub"]  # no hidden file, no half body
    assert in_flight == ["sub"]  # nor while the bodies arrived: they had no name
    assert leftovers(summary["sid"]) == {}


def test_the_next_start_sweeps_the_doors_temporary_names(root: Path) -> None:
    """What an older door, or the fallback on a file system without O_TMPFILE, left: gone before the first
    answer, and the audit says how many."""
    workspace = root / "ws"
    for planted in PLANTED:
        (workspace / planted).write_bytes(b"half a body")
    (workspace / "kept.tmp").write_bytes(b"the person's")
    subprocess.run(["chown", "-R", "65534:65534", str(workspace)], check=True)
    live = _session(root, [sys.executable, "-c", "import json; print(json.dumps({'probe': 'ready'}), flush=True)"])
    try:
        live.wait_probe("ready")
        summary = live.finish()
    finally:
        live.stop()
    assert summary["exit_code"] == 0, summary
    assert _tree(workspace) == ["kept.tmp", "sub"]
    audit = (root / "audit" / summary["sid"] / "audit.jsonl").read_text().splitlines()
    sweeps = [event for event in map(json.loads, audit) if event.get("op") == "sweep"]
    assert [event["removed"] for event in sweeps] == [len(PLANTED)]
