"""Started commands the app never polls cannot make the shell door run out of memory (real session, root).

The app starts eight commands (max_live), each printing 64 MiB on stdout and on stderr with max_output_bytes
64 MiB, and polls none. Before, each started command kept every frame (the head and the tail of both streams,
about 128 MiB) until 64 more had finished: the eighth start had the door OOM-killed and the session ended 70
(fail closed). Held by the shell door (a process the app is not): a started command keeps at most
JOB_KEPT_BYTES that no poll took, then its pipes wait for a poll, and a poll lets go of what it returned. So the
door answers the ninth start (429 shell.max_live), and each command, polled, gives its whole head and tail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)

pytestmark = pytest.mark.root

APP = str(Path(__file__).with_name("unpolled_app.py"))
HALF = 32 << 20  # a stream's head and its tail, each half of max_output_bytes


def test_unpolled_commands_wait_for_their_polls_and_the_door_lives() -> None:
    root = Path(tempfile.mkdtemp(prefix="sh-test-unpolled-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    try:
        _unpolled(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _unpolled(root: Path) -> None:
    (root / "ws").mkdir()
    document = basic_manifest(root / "ws", [sys.executable, APP])
    document["app"]["process"]["max_memory_mb"] = 512  # type: ignore[index]
    document["doors"]["shell"] = {"workspace": "read"}  # type: ignore[index]
    document["edges"] = [["app", "fs"], ["app", "shell"]]
    manifest = write_manifest(root, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                           "--audit-dir", str(root / "audit")],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    probes, summary = probes_and_summary(done.stdout)
    assert leftovers(summary["sid"]) == {}
    found = probes["unpolled"]
    assert found["refused"] == {"status": 429, "error": "shell.max_live"}
    assert found["polled"] == {command_id: {"bytes": {"stdout": 2 * HALF, "stderr": 2 * HALF}, "exit_code": 0}
                               for command_id in found["started"]}
