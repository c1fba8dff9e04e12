"""Bytes in flight count. The app opens 40 uploads and stalls each one part way: before, each held its
temporary file in the workspace (40 of them held 37 MiB against a 16 MiB quota), since the quota counted a
body only once it was whole. Held by the fs door (a process the app is not): a body's bytes are reserved
against max_total_bytes as they arrive (507, given back when it is refused or aborted), and one client has
at most max_concurrent_uploads bodies in flight (429)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.attacks._live import LiveSession
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import basic_manifest, leftovers, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent
QUOTA = 4 * 1024 * 1024
CAP = 8  # the row's default: the manifest leaves doors.fs.max_concurrent_uploads out
TEMP_PREFIX = ".sh-fs-"


@dataclass
class UploadRun:
    workspace: Path
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    held_on_disk: dict[str, int] = field(default_factory=dict)  # per phase, what the door's temp files held
    summary: dict[str, Any] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)


def _door_pid(sid: str) -> int:
    return int((Path("/sys/fs/cgroup/pids/sharness") / sid / "fs" / "cgroup.procs").read_text().split()[0])


def _temp_bytes(workspace: Path, pid: int) -> int:
    """What the door's bodies hold on disk: its named temporary files, and the unnamed (O_TMPFILE) files of
    the workspace it holds open."""
    held = sum(p.stat().st_size for p in workspace.iterdir() if p.name.startswith(TEMP_PREFIX))
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith(f"{workspace}/") and link.endswith(" (deleted)"):
                held += os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            continue
    return held


def _until_no_temp_files(workspace: Path, pid: int, timeout_s: float = 60.0) -> None:
    """The door has noticed every abort once the aborted bodies' temporary files are gone."""
    deadline = time.monotonic() + timeout_s
    while _temp_bytes(workspace, pid):
        assert time.monotonic() < deadline, "the door kept the aborted uploads' temporary files"
        time.sleep(0.01)


def _drive(live: LiveSession, run: UploadRun) -> None:
    pid = _door_pid(live.wait_probe("ready")["sid"])
    for phase in ("capped", "quota"):
        live.send(phase)
        run.probes[phase] = live.wait_probe(phase, timeout_s=120)
        run.held_on_disk[phase] = _temp_bytes(run.workspace, pid)
        live.send("abort")
        live.wait_probe("aborted")
        live.probes.pop("aborted")  # the next phase reports it again
        _until_no_temp_files(run.workspace, pid)
    live.send("write")
    run.probes["written"] = live.wait_probe("written", timeout_s=120)


@pytest.fixture(scope="module")
def uploads() -> Iterator[UploadRun]:
    root = Path(tempfile.mkdtemp(prefix="sh-test-uploads-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    (root / "ws").mkdir()
    manifest = basic_manifest(root / "ws", [sys.executable, str(HERE / "uploads_app.py"), str(QUOTA), str(CAP)])
    manifest["doors"]["fs"]["max_total_bytes"] = QUOTA  # type: ignore[index]
    live = LiveSession(write_manifest(root, manifest), root / "audit", root / "stderr")
    run = UploadRun(root / "ws")
    try:
        _drive(live, run)
        run.summary = live.finish()
        run.audit = _audit(root / "audit" / run.summary["sid"])
        yield run
    finally:
        live.stop()
        subprocess.run(["rm", "-rf", str(root)], check=False)


def _audit(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / "audit.jsonl").read_text().splitlines()]


def test_one_client_gets_at_most_the_cap_of_uploads_in_flight(uploads: UploadRun) -> None:
    capped = uploads.probes["capped"]
    assert capped["answers"] == {"429 max_concurrent_uploads": 40 - CAP}, capped
    assert capped["open"] == CAP
    assert 0 < uploads.held_on_disk["capped"] <= CAP * 300 * 1024  # measured: unnamed files count too


def test_bytes_still_arriving_count_against_the_quota(uploads: UploadRun) -> None:
    """8 × 900 KiB against 4 MiB: at least 4 bodies are refused as their bytes arrive, and the workspace never
    holds more than the quota meanwhile."""
    quota = uploads.probes["quota"]
    assert set(quota["answers"]) == {"507 max_total_bytes"}, quota
    assert sum(quota["answers"].values()) >= quota["cannot_fit"] == 4
    assert 0 < uploads.held_on_disk["quota"] <= QUOTA


def test_aborted_uploads_give_back_what_they_held(uploads: UploadRun) -> None:
    """After both aborts the app writes exactly the quota, whole, and one byte more is refused."""
    assert uploads.probes["written"]["statuses"] == [[201, ""]] * 4 + [[507, "max_total_bytes"]]
    landed = sorted(p.name for p in uploads.workspace.iterdir())
    assert landed == [f"whole-{index}" for index in range(4)]


def test_each_refusal_is_audited_with_its_row(uploads: UploadRun) -> None:
    rows = [event.get("row") for event in uploads.audit if event.get("decision") == "refuse"]
    assert rows.count("max_concurrent_uploads") == 40 - CAP
    assert rows.count("max_total_bytes") >= 5


def test_the_session_ended_cleanly(uploads: UploadRun) -> None:
    assert uploads.summary["exit_code"] == 0 and uploads.summary["teardown_errors"] == []
    assert leftovers(uploads.summary["sid"]) == {}
