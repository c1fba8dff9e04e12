"""The audit is complete or the door refuses; a secret in a name is redacted, never the event deleted.

One real session of its own per stdio mode (the app's stdio redirected; a terminal the launcher relays). Its app
is audit_flood_app.py: four kept-alive stat loops against the fs door while it writes, first with the launcher
running (the flood that once lost 14 000 of 33 000 events and 3 of 6 writes), then with the launcher stopped
by the test (SIGSTOP: a launcher that cannot keep up) while the test itself, with the app's SVID, finds the
doors answering 503 and writes nothing. Then a file under a token-shaped name, renamed, and a CONNECT to a
token-shaped host. Every figure is a count: nothing here waits on a clock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from doors.client import DoorClient
from launcher.kernel import netns
from tests.attacks._live import LiveSession
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent
TRUST_DOMAIN = "test.sharness.test"
STATS, WRITES = 1500, 6  # per loop (four loops), per phase
PROBE_LIMIT = 20_000  # requests the test sends at most to find a stopped launcher's door answering 503
TOKEN = "ghp_" + "R3dact" * 6
MARK = re.compile(r"\[redacted:github:([0-9a-f]{12})\]")


@dataclass
class Stalled:
    """What the test itself saw of the doors while the launcher was stopped."""

    fs_requests: int = 0
    fs_refusal: dict[str, Any] = field(default_factory=dict)
    write_status: int = 0
    write_landed: bool = True
    net_connects: int = 0
    net_statuses: Counter[int] = field(default_factory=Counter)


@dataclass
class FloodRun:
    root: Path
    summary: dict[str, Any]
    probes: dict[str, dict[str, Any]]
    events: list[dict[str, Any]]
    raw_log: bytes
    stalled: Stalled
    verify_text: str
    verify_json: dict[str, Any]

    def door_events(self, **match: Any) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == "door.event" and all(e.get(k) == v for k, v in match.items())]

    def lost(self, role: str) -> int:
        return sum(e["count"] for e in self.events if e["event"] == "audit.lost" and e["role"] == role)


def _manifest(root: Path) -> Path:
    workspace = root / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, str(HERE / "audit_flood_app.py"), str(STATS), str(WRITES)])
    fs = document["doors"]["fs"]  # type: ignore[index]
    document["doors"] = {"fs": fs, "net": {"allow": {"app": ["localhost:9"]}}}
    document["edges"] = [["app", "fs"], ["app", "net"]]
    (root / "m").mkdir()
    return write_manifest(root / "m", document)


def _as_app(sid: str) -> DoorClient:
    """The fs door as the test reaches it: root, outside the app's confinement, with the app's own SVID."""
    private = f"/run/sharness/{sid}/app"
    return DoorClient.from_files("fs", f"/run/sharness/{sid}/doors/fs.sock", f"{private}/svid.pem",
                                 f"{private}/bundle.pem", TRUST_DOMAIN, sid, timeout_s=60)


def _fs_until_503(sid: str, stalled: Stalled, workspace: Path) -> None:
    with _as_app(sid) as fs:
        while stalled.fs_requests < PROBE_LIMIT:
            stalled.fs_requests += 1
            answer = fs.request("GET", "/v0/fs/stat/seed.txt")
            if answer.status == 503:
                stalled.fs_refusal = answer.json()
                break
        stalled.fs_requests += 1
        stalled.write_status = fs.request("PUT", "/v0/fs/files/written-while-stalled.txt", body=b"x").status
    stalled.write_landed = (workspace / "written-while-stalled.txt").exists()


def _connect_status(sid: str) -> int:
    with netns.entered(f"sh-{sid}-app"):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with sock:
        sock.settimeout(60)
        sock.connect(("127.0.0.1", 3128))
        sock.sendall(b"CONNECT localhost:9 HTTP/1.1\r\nHost: localhost:9\r\n\r\n")
        head = b""
        while b"\r\n" not in head and (got := sock.recv(4096)):
            head += got
    return int(head.split(b" ", 2)[1])


def _net_until_503(sid: str, stalled: Stalled) -> None:
    """CONNECTs to an allowlisted name (the door resolves it: an act) until the door refuses to act unaudited."""
    while stalled.net_connects < PROBE_LIMIT and not stalled.net_statuses[503]:
        stalled.net_connects += 1
        stalled.net_statuses[_connect_status(sid)] += 1


def _stall(live: LiveSession, sid: str, workspace: Path) -> Stalled:
    stalled = Stalled()
    live.send("stalled")
    live.wait_probe("stalled.started")
    os.kill(live.proc.pid, signal.SIGSTOP)
    try:
        _fs_until_503(sid, stalled, workspace)
        _net_until_503(sid, stalled)
    finally:
        os.kill(live.proc.pid, signal.SIGCONT)
    return stalled


def _verify(audit_dir: str) -> tuple[str, dict[str, Any]]:
    text = subprocess.run([*LAUNCHER, "verify-audit", audit_dir], capture_output=True, text=True, timeout=60)
    as_json = subprocess.run([*LAUNCHER, "verify-audit", audit_dir, "--json"], capture_output=True, text=True,
                             timeout=60)
    assert text.returncode == 0 == as_json.returncode, text.stdout + text.stderr
    return text.stdout, json.loads(as_json.stdout)


def _drive(live: LiveSession, root: Path) -> tuple[str, Stalled, dict[str, Any]]:
    try:
        sid = live.wait_probe("ready")["sid"]
        live.send("flood")
        live.wait_probe("flood", timeout_s=300)
        stalled = _stall(live, sid, root / "ws")
        live.wait_probe("stalled", timeout_s=300)
        live.send("token")
        live.wait_probe("done")
        return sid, stalled, live.finish()
    finally:
        live.stop()


def _run(tty: bool) -> FloodRun:
    root = Path(tempfile.mkdtemp(prefix="sh-test-audit-", dir="/var/lib"))
    root.chmod(0o755)
    try:
        live = LiveSession(_manifest(root), root / "audit", root / "stderr", tty=tty)
        sid, stalled, summary = _drive(live, root)
        raw = Path(summary["audit_dir"], "audit.jsonl").read_bytes()
        text, as_json = _verify(summary["audit_dir"])
        assert leftovers(sid) == {} and summary["teardown_errors"] == []
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    events = [json.loads(line) for line in raw.splitlines()]
    return FloodRun(root, summary, live.probes, events, raw, stalled, text, as_json)


@pytest.fixture(scope="module", params=[False, True], ids=["stdio-redirected", "terminal"])
def flood(request: pytest.FixtureRequest) -> Iterator[FloodRun]:
    if os.geteuid() != 0:
        pytest.skip("needs root on a real kernel")
    run = _run(bool(request.param))
    try:
        yield run
    finally:
        shutil.rmtree(run.root, ignore_errors=True)


def _writes(run: FloodRun, phase: str) -> list[dict[str, Any]]:
    return list(run.probes[phase]["writes"])


@pytest.mark.parametrize("phase", ["flood", "stalled"])
def test_every_write_the_door_acknowledged_has_its_event(flood: FloodRun, phase: str) -> None:
    writes = _writes(flood, phase)
    assert [write["status"] for write in writes] == [201] * WRITES, writes
    for write in writes:
        acts = flood.door_events(op="write", path=write["path"], decision="allow")
        assert len(acts) == 1, (write, acts)  # once: the 503'd tries before it did nothing, and left no act


def test_the_log_holds_exactly_the_acts_the_door_did(flood: FloodRun) -> None:
    """Each stat answered 200 is one `stat` act in the log; no 503 left an act behind."""
    answered = sum(flood.probes[phase]["stats"].get("200", 0) for phase in ("flood", "stalled"))
    answered += flood.stalled.fs_requests - 2  # the test's own stats before the 503 it stopped at
    assert len(flood.door_events(op="stat", decision="allow")) == answered
    assert not flood.door_events(path="written-while-stalled.txt")


def test_every_request_is_in_the_log_or_counted_lost(flood: FloodRun) -> None:
    """fs: one http.request per request, or an audit.lost count for it; net: one net.request per CONNECT."""
    app_fs = flood.probes["ready"]["seed"]["refused_before"] + 1 + 2  # the seed's tries, the token write and rename
    app_fs += sum(flood.probes[phase]["requests"] for phase in ("flood", "stalled"))
    answered = flood.door_events(role="fs", kind="http.request")
    assert len(answered) + flood.lost("fs") == app_fs + flood.stalled.fs_requests
    connects = flood.door_events(role="net", kind="net.request")
    assert len(connects) + flood.lost("net") == flood.stalled.net_connects + 1  # and the app's token CONNECT


def test_a_stopped_launcher_makes_the_doors_refuse_rather_than_act_unaudited(flood: FloodRun) -> None:
    stalled = flood.stalled
    assert stalled.fs_refusal == {**stalled.fs_refusal, "error": "audit_backpressure", "who": "fs"}
    assert stalled.write_status == 503 and not stalled.write_landed
    assert stalled.net_statuses[503] == 1  # a CONNECT it neither resolved nor dialled
    assert flood.probes["stalled"]["stats"].get("503", 0) > 0 or stalled.fs_requests > 1


def test_verify_audit_says_intact_and_how_many_events_were_lost(flood: FloodRun) -> None:
    lost = flood.lost("fs") + flood.lost("net")
    assert flood.verify_json["intact"] is True and flood.verify_json["lost"] == lost
    assert flood.verify_text.startswith(f"intact, {lost} event{'' if lost == 1 else 's'} lost")


def test_a_token_in_a_file_name_is_redacted_and_both_events_are_kept(flood: FloodRun) -> None:
    assert TOKEN.encode() not in flood.raw_log
    [write] = [e for e in flood.door_events(op="write", decision="allow") if MARK.search(e["path"])]
    [rename] = flood.door_events(op="rename", decision="allow")
    assert {k: write[k] for k in ("op", "decision", "status", "row", "role")} == \
        {"op": "write", "decision": "allow", "status": 200, "row": "", "role": "fs"}
    assert {k: rename[k] for k in ("op", "decision", "status", "row", "role")} == \
        {"op": "rename", "decision": "allow", "status": 200, "row": "", "role": "fs"}
    fingerprints = {MARK.search(text).group(1) for text in (write["path"], rename["path"], rename["dest"])}  # type: ignore[union-attr]
    assert len(fingerprints) == 1  # one secret, one fingerprint: the rename is tied to the write
    assert rename["dest"].startswith("renamed-[redacted:github:")
    assert (flood.root / "ws" / f"renamed-{TOKEN}.txt").exists()  # redacted in the log, done in the workspace


def test_a_connect_to_a_token_shaped_host_has_its_refusal_event(flood: FloodRun) -> None:
    assert flood.probes["token"]["connect"] == 400  # `_` is no host character: refused before any lookup
    [event] = [e for e in flood.door_events(kind="net.request") if MARK.search(e["requested"])]
    assert event == {**event, "decision": "refuse", "status": 400, "row": "doors.net.framing", "reason": "bad-name",
                     "client_role": "app", "role": "net"}
    assert event["requested"].endswith(".example.test:443")
    [write] = [e for e in flood.door_events(op="write") if MARK.search(e["path"])]
    assert MARK.search(event["requested"]).group(1) == MARK.search(write["path"]).group(1)  # type: ignore[union-attr]
