"""A door's memory is bounded by what it promises, not by how many clients stop reading. The app asks the fs
door for a 4000-entry listing (about 1 MiB of JSON) on 100 connections and reads none of it: before, each
connection held its whole answer three times over (the JSON, the framed copy, the TLS ciphertext) and the
door was OOM-killed at 256 MiB, ending the session. Held by the fs door (a process the app is not): a
response goes out in 64 KiB pieces and a listing is read 256 entries at a time as the client takes them, so a
connection holds a piece or two whatever the answer's size, and a client that does not drain a piece within
send_timeout_s is cut and audited (`http.cut`, row http.send_timeout_s)."""

from __future__ import annotations

import json
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
ENTRIES, CONNECTIONS = 4000, 100
NAME = "n" * 190  # long names: each listing is about 1 MiB of JSON
MEMORY_CGROUP = Path("/sys/fs/cgroup/memory/sharness")


@dataclass
class MemoryRun:
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    door: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    cuts: list[dict[str, Any]] = field(default_factory=list)


def _fs_door(sid: str) -> dict[str, Any]:
    """The fs door's pids and memory figures, from its own cgroup (v1 memory controller)."""
    cgroup = MEMORY_CGROUP / sid / "fs"
    read = lambda name: (cgroup / name).read_text().split()  # noqa: E731
    return {"pids": read("cgroup.procs"), "max_usage": int(read("memory.max_usage_in_bytes")[0]),
            "limit": int(read("memory.limit_in_bytes")[0]), "failcnt": int(read("memory.failcnt")[0])}


def _cut_events(audit: Path) -> list[dict[str, Any]]:
    if not audit.exists():
        return []
    events = [json.loads(line) for line in audit.read_text().splitlines() if '"http.cut"' in line]
    return [event for event in events if event.get("kind") == "http.cut"]


def _until_cut(audit: Path, live: LiveSession, timeout_s: float = 180.0) -> list[dict[str, Any]]:
    """Wait until the door has cut every stalled connection (it audits each), or the launcher ends."""
    deadline = time.monotonic() + timeout_s
    while len(cuts := _cut_events(audit)) < CONNECTIONS:
        assert live.proc.poll() is None, f"the session ended while its connections stalled: {live.stderr()[-2000:]}"
        assert time.monotonic() < deadline, f"only {len(cuts)} of {CONNECTIONS} stalled connections were cut"
        time.sleep(0.2)
    return cuts


@pytest.fixture(scope="module")
def memory_run() -> Iterator[MemoryRun]:
    if not MEMORY_CGROUP.parent.is_dir():
        pytest.skip("no cgroup v1 memory controller to read the door's figures from")
    root = Path(tempfile.mkdtemp(prefix="sh-test-doormem-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    big = root / "ws" / "big"
    big.mkdir(parents=True)
    for index in range(ENTRIES):
        (big / f"{NAME}-{index:05d}").touch()
    subprocess.run(["chown", "-R", "65534:65534", str(root / "ws")], check=True)
    argv = [sys.executable, str(HERE / "listings_app.py"), "big", str(ENTRIES), str(CONNECTIONS)]
    live = LiveSession(write_manifest(root, basic_manifest(root / "ws", argv)), root / "audit", root / "stderr")
    run = MemoryRun()
    try:
        sid = live.wait_probe("ready")["sid"]
        run.door["before"] = _fs_door(sid)
        live.send("stall")
        run.probes["stalled"] = live.wait_probe("stalled", timeout_s=180)
        run.cuts = _until_cut(root / "audit" / sid / "audit.jsonl", live)
        run.door["stalled"] = _fs_door(sid)
        live.send("drain")
        run.probes["drained"] = live.wait_probe("drained", timeout_s=180)
        run.probes["after"] = live.wait_probe("after", timeout_s=60)
        run.door["after"] = _fs_door(sid)
        run.summary = live.finish()
        yield run
    finally:
        live.stop()
        subprocess.run(["rm", "-rf", str(root)], check=False)


def test_the_fs_door_survives_and_stays_under_its_limit(memory_run: MemoryRun) -> None:
    before, after = memory_run.door["before"], memory_run.door["after"]
    assert after["pids"] == before["pids"]  # the same door process throughout: never killed, never restarted
    assert after["max_usage"] < after["limit"] and after["failcnt"] == 0, after
    print("fs door memory:", memory_run.door, memory_run.probes["drained"])


def test_a_well_behaved_client_still_gets_whole_answers(memory_run: MemoryRun) -> None:
    assert memory_run.probes["stalled"]["opened"] == CONNECTIONS
    assert memory_run.probes["stalled"]["second_client"] == {"status": 200, "entries": ENTRIES}
    assert memory_run.probes["after"]["second_client"] == {"status": 200, "entries": ENTRIES}


def test_every_stalled_client_is_cut_and_audited_with_its_row(memory_run: MemoryRun) -> None:
    drained = memory_run.probes["drained"]
    assert drained["cut"] == CONNECTIONS and drained["complete"] == 0, drained
    assert 0 < drained["most_body_bytes"] < 1024 * 1024  # each got the start of its answer, then the cut
    cuts = memory_run.cuts
    assert len(cuts) == CONNECTIONS
    assert {(c["door"], c["client_role"], c["row"], c["path"]) for c in cuts} == {
        ("fs", "app", "http.send_timeout_s", "/v0/fs/list/big")}
    assert all(c["sent"] < 1024 * 1024 for c in cuts)  # cut before the answer went out, whatever its size


def test_the_session_ended_cleanly(memory_run: MemoryRun) -> None:
    assert memory_run.summary["exit_code"] == 0, memory_run.summary
    assert leftovers(memory_run.summary["sid"]) == {}
