"""A uid is never handed to two sessions in a row: the second session's app cannot reach what the first one's
left under its uid. Before, every session's app got the same uid (the highest free system id), and a SysV
segment of mode 0600 the first app made was the second app's to read. Held by the launcher's id allocator
(launcher/policy/id_alloc.py, launcher/kernel/session_ids.py): random in a span no other allocator uses,
never an id in use or in the ledger of ids handed out. (With an IPC namespace per component the segment is
gone with its session as well: then the second app finds nothing at all.)"""

from __future__ import annotations

import secrets
import subprocess
import sys
import tempfile
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


@dataclass
class TwoSessions:
    key: int
    probes: list[dict[str, Any]] = field(default_factory=list)  # planted, looked
    ids: list[dict[str, int]] = field(default_factory=list)  # per session: account name suffix -> id
    summaries: list[dict[str, Any]] = field(default_factory=list)


def _accounts(sid: str) -> dict[str, int]:
    """Every user (uid) and group (gid) of a session while it runs, by name without the `sh-<sid>-` prefix."""
    prefix = f"sh-{sid}-"
    found = {}
    for database, kind in (("/etc/passwd", "user"), ("/etc/group", "group")):
        for line in Path(database).read_text().splitlines():
            name, _, number = line.split(":")[:3]
            if name.startswith(prefix):
                found[f"{kind} {name[len(prefix):]}"] = int(number)
    return found


def _session(root: Path, index: int, mode: str, key: int, run: TwoSessions) -> None:
    (root / f"ws{index}").mkdir()
    manifest = basic_manifest(root / f"ws{index}", [sys.executable, str(HERE / "uid_app.py"), mode, str(key)])
    manifest["doors"]["net"] = {"allow": {"app": []}}  # type: ignore[index]  # a third component with a user
    manifest["edges"] = [["app", "fs"], ["app", "net"]]
    (root / f"s{index}").mkdir()
    live = LiveSession(write_manifest(root / f"s{index}", manifest), root / "audit", root / f"s{index}" / "err")
    try:
        probe = live.wait_probe("planted" if mode == "plant" else "looked", timeout_s=90)
        run.probes.append(probe)
        run.ids.append(_accounts(probe["sid"]))
        live.send("end")
        run.summaries.append(live.finish())
    finally:
        live.stop()


@pytest.fixture(scope="module")
def two_sessions() -> Iterator[TwoSessions]:
    root = Path(tempfile.mkdtemp(prefix="sh-test-uids-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    run = TwoSessions(key=0x53480000 | secrets.randbits(16))
    try:
        _session(root, 1, "plant", run.key, run)
        _session(root, 2, "look", run.key, run)
        yield run
    finally:
        subprocess.run(["ipcrm", "-M", str(run.key)], capture_output=True, check=False)  # until IPC namespaces
        subprocess.run(["rm", "-rf", str(root)], check=False)


def test_the_first_app_planted_a_segment_only_its_uid_may_attach(two_sessions: TwoSessions) -> None:
    assert two_sessions.probes[0]["errno"] is None, two_sessions.probes[0]


def test_the_second_app_cannot_read_what_the_first_left(two_sessions: TwoSessions) -> None:
    """EACCES: the segment is there, the uid is another (ENOENT once each session has its own IPC namespace)."""
    looked = two_sessions.probes[1]
    assert looked["errno"] in ("EACCES", "ENOENT"), looked
    assert "found" not in looked


def test_no_uid_or_gid_of_one_session_is_the_next_ones(two_sessions: TwoSessions) -> None:
    first, second = two_sessions.ids
    assert {"user app", "user net", "user keys", "group app", "group to-fs", "group to-net"} <= set(first)
    assert set(first) == set(second)
    assert not set(first.values()) & set(second.values()), (first, second)
    planted, looked = two_sessions.probes
    assert planted["uid"] != looked["uid"] and planted["gid"] != looked["gid"]
    assert not set(planted["groups"]) & set(looked["groups"])


def test_both_sessions_ended_cleanly(two_sessions: TwoSessions) -> None:
    for summary in two_sessions.summaries:
        assert summary["exit_code"] == 0 and summary["teardown_errors"] == []
        assert leftovers(summary["sid"]) == {}
