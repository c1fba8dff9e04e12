"""The fs door as the launcher starts it: `doors.fs.server.serve(contract)` in its own process, with its
status fd, SVID memfd and inherited listener; audit events arrive on the status fd, never content."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from doors._contract import CONTRACT_ENV, DoorContract
from doors._transport.testing import Session, scratch_dir
from doors.client import DoorClient
from doors.fs.client import DoorRefused, FsClient
from doors.fs.server import thread_safe
from pki.testing import SessionPKI

DOOR = "from doors._contract import DoorContract\nfrom doors.fs.server import serve\nserve(DoorContract.from_environ())"


@pytest.fixture
def s() -> Iterator[Session]:
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory)


def _messages(status: socket.socket) -> Iterator[dict[str, Any]]:
    while True:
        yield json.loads(status.recv(65536))


def test_serve_runs_the_door_from_its_contract(s: Session, workspace: str) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    memfd = os.memfd_create("sh-svid-fs")
    os.write(memfd, s.pki.svid_pem("fs"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = os.path.join(s.directory, "fs.sock")
    listener.bind(path)
    listener.listen(16)
    contract = DoorContract(
        role="fs", session_id=s.pki.session_id, trust_domain=s.pki.trust_domain,
        edges=(("app", "fs"),), bundle_pem=s.pki.bundle_pem().decode(),
        rows={"workspace": workspace, "append_only": ["log"]},
        listen_fds={"door": listener.fileno()}, status_fd=theirs.fileno(), svid_fd=memfd)
    door = subprocess.Popen([sys.executable, "-c", DOOR], env={**os.environ, CONTRACT_ENV: contract.to_json()},
                            pass_fds=(theirs.fileno(), memfd, listener.fileno()))
    theirs.close()
    os.close(memfd)
    listener.close()
    ours.settimeout(60)
    try:
        messages = _messages(ours)
        assert next(messages) == {"type": "ready"}
        client = DoorClient.from_files("fs", path, s.svid_path("app"), s.pem_path("bundle", s.pki.bundle_pem()),
                            s.pki.trust_domain, s.pki.session_id, client_role="app")
        with FsClient(client) as fs:
            hello = fs.door.hello()
            held = {row["row"]: row["held"] for row in hello["rows"]}
            assert held["fs.append_only"] is True and held["fs.workspace"] is True
            fs.write("a.txt", b"secret-content")
            fs.append("log", b"line\n")
            with pytest.raises(DoorRefused):
                fs.delete("log")
        events: list[dict[str, Any]] = []
        while len(events) < 3:
            message = next(messages)
            if message["type"] == "audit" and "op" in message["event"]:
                events.append(message["event"])
        assert [(e["op"], e["path"], e["decision"], e["row"]) for e in events] == [
            ("write", "a.txt", "allow", ""), ("append", "log", "allow", ""), ("delete", "log", "refuse", "append_only")]
        assert all("secret-content" not in json.dumps(e) for e in events)
    finally:
        door.send_signal(signal.SIGTERM)
        assert door.wait(timeout=30) == 0
        ours.close()


async def test_thread_safe_audit_reaches_a_trio_channel_from_worker_threads() -> None:
    send, receive = trio.open_memory_channel[dict[str, Any]](10)
    emit = thread_safe(send.send_nowait)
    emit({"from": "loop"})
    await trio.to_thread.run_sync(emit, {"from": "worker"})
    assert [receive.receive_nowait(), receive.receive_nowait()] == [{"from": "loop"}, {"from": "worker"}]
