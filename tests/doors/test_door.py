"""A real door process (`python -m doors`): SVID from a memfd, hello over mTLS, ready and audit on its status fd.

`python -m doors` starts the door the contract's role names (doors.serve): the fs door for fs, the generic door
for a role without features of its own.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from doors._contract import CONTRACT_ENV, DoorContract
from doors._door import hello_body
from doors._transport.testing import scratch_dir
from doors.client import DoorClient, DoorRefused
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES, DOOR_LISTENER, MAX_STATUS_BYTES, encode_status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class DoorProcess:
    process: subprocess.Popen[bytes]
    status: socket.socket
    socket_path: str
    pki: SessionPKI
    directory: str
    role: str = "fs"

    def message(self, timeout_s: float = 30) -> dict[str, object]:
        self.status.settimeout(timeout_s)
        return dict(json.loads(self.status.recv(MAX_STATUS_BYTES)))

    def client(self, as_role: str) -> DoorClient:
        svid = os.path.join(self.directory, f"{as_role}.svid.pem")
        if not os.path.exists(svid):
            self.pki.write_svid(as_role, self.directory)
        bundle = os.path.join(self.directory, "bundle.pem")
        with open(bundle, "wb") as out:
            out.write(self.pki.bundle_pem())
        return DoorClient.from_files(self.role, self.socket_path, svid, bundle, self.pki.trust_domain,
                                     self.pki.session_id, client_role=as_role)


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("sharness-test-svid", 0)
    os.write(fd, data)
    return fd


def _fs_rows(directory: str) -> dict[str, object]:
    workspace = os.path.join(directory, "workspace")
    os.makedirs(workspace, exist_ok=True)
    return {"read_only": [".git"], "refuse_secrets": True, "workspace": workspace}


def _start(pki: SessionPKI, directory: str, svid: bytes, role: str = "fs",
           rows: dict[str, object] | None = None) -> DoorProcess:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = os.path.join(directory, f"{role}.sock")
    listener.bind(path)
    listener.listen(16)
    memfd = _memfd(svid)
    contract = DoorContract(role=role, session_id=pki.session_id, trust_domain=pki.trust_domain,
                            edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(),
                            rows=_fs_rows(directory) if rows is None else rows,
                            listen_fds={DOOR_LISTENER: listener.fileno()}, status_fd=theirs.fileno(),
                            svid_fd=memfd)
    env = {CONTRACT_ENV: contract.to_json(), "PATH": "/usr/bin:/bin"}
    try:
        process = subprocess.Popen([sys.executable, "-m", "doors"], env=env, cwd=ROOT,
                                   pass_fds=(theirs.fileno(), memfd, listener.fileno()))
    finally:
        theirs.close()
        os.close(memfd)
        listener.close()
    return DoorProcess(process, ours, path, pki, directory, role)


@pytest.fixture
def door() -> Iterator[DoorProcess]:
    with scratch_dir() as directory:
        pki = SessionPKI.create()
        running = _start(pki, directory, pki.svid_pem("fs"))
        try:
            yield running
        finally:
            if running.process.poll() is None:
                running.process.kill()
            running.process.wait(timeout=30)
            running.status.close()


def test_the_door_reports_ready_answers_hello_and_audits(door: DoorProcess) -> None:
    assert door.message() == {"type": "ready"}
    with door.client("app") as fs:
        hello = fs.hello()
    assert hello["role"] == "fs"
    assert hello["spiffe_id"] == door.pki.identity("fs").uri()
    assert (hello["session"], hello["trust_domain"]) == (door.pki.session_id, door.pki.trust_domain)
    assert hello["edges_in"] == ["app"]
    rows = {row["row"]: row for row in hello["rows"]}
    assert rows["edges"]["barrier"] == "Boundary" and rows["edges"]["held"]
    assert rows["fs.read_only"]["value"] == [".git"]
    assert rows["fs.read_only"]["held"] is True  # `python -m doors` started the fs door itself
    audit = door.message()
    assert audit["type"] == "audit"
    assert audit["event"] == {**audit["event"], "kind": "http.request", "client_role": "app",  # type: ignore[dict-item]
                              "path": "/v0/hello", "status": 200}


def test_a_refused_client_is_audited_once(door: DoorProcess) -> None:
    assert door.message() == {"type": "ready"}
    with door.client("net") as fs, pytest.raises(DoorRefused, match="edge net->fs"):
        fs.hello()
    event = door.message()["event"]
    assert isinstance(event, dict)
    assert (event["kind"], event["stage"], event["client_role"]) == ("transport.refused", "edge", "net")
    assert event["peer_uid"] == os.getuid()


def test_sigterm_ends_the_door_cleanly(door: DoorProcess) -> None:
    assert door.message() == {"type": "ready"}
    door.process.send_signal(signal.SIGTERM)
    assert door.process.wait(timeout=30) == 0


def test_what_was_queued_when_sigterm_came_still_reaches_the_launcher(door: DoorProcess) -> None:
    """The launcher reads nothing while 600 requests are answered (its socket fills, the rest waits in the
    door's queue); after SIGTERM the door sends every event before it exits, and nothing is counted lost."""
    assert door.message() == {"type": "ready"}
    with door.client("app") as fs:
        for _ in range(600):
            fs.hello()
    door.process.send_signal(signal.SIGTERM)
    messages = []
    door.status.settimeout(30)
    while data := door.status.recv(MAX_STATUS_BYTES):  # until the door's end closes
        messages.append(json.loads(data))
    assert door.process.wait(timeout=30) == 0
    kinds = [m["event"]["kind"] for m in messages if m["type"] == "audit"]  # type: ignore[index]
    assert kinds == ["http.request"] * 600
    assert not [m for m in messages if "dropped_before" in m or m["type"] == "lost"]


def test_a_bad_svid_is_reported_fatal() -> None:
    with scratch_dir() as directory:
        running = _start(SessionPKI.create(), directory, b"not a key")
        try:
            message = running.message()
            assert message["type"] == "fatal"
            assert "fs door failed" in str(message["detail"])
            assert running.process.wait(timeout=30) == 1
        finally:
            if running.process.poll() is None:
                running.process.kill()
            running.status.close()


def test_hello_body_without_rows_still_names_the_edge_check() -> None:
    contract = DoorContract(role="keys", session_id="0123abcd", trust_domain="t.sharness.test",
                            edges=(("net", "keys"), ("model", "keys")), bundle_pem="")
    body = hello_body(contract)
    assert body["edges_in"] == ["model", "net"]
    assert [row["row"] for row in body["rows"]] == ["edges"]


def test_an_oversized_audit_event_becomes_a_marker() -> None:
    data = encode_status({"type": "audit", "event": {"kind": "http.request", "path": "x" * 70_000}})
    assert len(data) <= MAX_STATUS_BYTES
    event = json.loads(data)["event"]
    assert (event["kind"], event["truncated"]) == ("http.request", True)
    assert event["bytes"] > MAX_STATUS_BYTES
