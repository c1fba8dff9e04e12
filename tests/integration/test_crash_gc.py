"""SIGKILL the launcher at each stage of creation and while the app runs; gc leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration._session import (
    LAUNCHER,
    SESSIONS,
    basic_manifest,
    leftovers,
    manifest_hash,
    new_leftovers,
    pids_with_uids,
    session_owner,
    session_uids,
    write_manifest,
)

pytestmark = pytest.mark.root

# Kill when the journal's last entry is of this kind (creation stages in order), or once the app runs.
STAGES = ["dir", "user", "group", "netns", "cgroup", "file", "pid", "app"]


def _journal_kinds(sid_dir: Path) -> list[str]:
    try:
        text = (sid_dir / "journal").read_text()
    except OSError:
        return []
    kinds = []
    for line in text.splitlines():
        try:
            kinds.append(json.loads(line)["kind"])
        except (ValueError, KeyError):
            break
    return kinds


def _kill_at(
    stage: str, launcher: subprocess.Popen[bytes], stderr: Path, timeout_s: float = 30
) -> tuple[str, set[int]]:
    """Watch the newest session journal and SIGKILL the launcher when it reaches `stage`."""
    deadline = time.monotonic() + timeout_s
    sid_dir: Path | None = None
    uids: set[int] = set()
    while time.monotonic() < deadline:
        if sid_dir is None and SESSIONS.is_dir():
            candidates = [p for p in SESSIONS.iterdir()
                          if not p.name.startswith(".") and session_owner(p) == launcher.pid]
            sid_dir = candidates[0] if candidates else None
        if sid_dir is not None:
            uids |= session_uids(sid_dir.name)
            kinds = _journal_kinds(sid_dir)
            wanted = kinds.count("pid") >= 3 if stage == "app" else stage in kinds
            if wanted:
                if stage == "app":
                    time.sleep(0.3)
                os.kill(launcher.pid, signal.SIGKILL)
                launcher.wait()
                return sid_dir.name, uids | session_uids(sid_dir.name)
        if launcher.poll() is not None:
            said = stderr.read_text(errors="replace")[-2000:]
            raise AssertionError(f"the launcher ended before stage {stage}: {said}")
        time.sleep(0.0005)
    raise AssertionError(f"stage {stage} never reached")


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_at_each_stage_then_gc_leaves_nothing(stage: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chmod(tmp_path, 0o755)
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/sleep", "60"]))
    digest = manifest_hash(manifest)
    before = leftovers()
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as stderr_file:
        launcher = subprocess.Popen(
            [*LAUNCHER, "run", str(manifest), "--expect-hash", digest, "--audit-dir", str(tmp_path / "audit"),
             "--best-effort"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr_file,
        )
    try:
        sid, uids = _kill_at(stage, launcher, stderr)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    gc = subprocess.run([*LAUNCHER, "gc", "--json"], capture_output=True, text=True, timeout=60)
    assert gc.returncode == 0, gc.stdout + gc.stderr
    assert leftovers(sid) == {}
    assert new_leftovers(before) == {}
    deadline = time.monotonic() + 5
    while pids_with_uids(uids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_uids(uids) == []

