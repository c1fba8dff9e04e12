"""The shell door fails closed: when a command cannot be given its own cgroup, the door does not start.

The door is exec'd (`python -m doors`) as an unprivileged user whose cgroup (this test's, not delegated) it
cannot make a child cgroup in: its start-up self-test refuses, it reports `fatal` naming why, and exits 1
without ever listening. The passing self-test runs in every real session (tests/integration/).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from doors._contract import CONTRACT_ENV, DoorContract
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES, DOOR_LISTENER, MAX_STATUS_BYTES

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[3]
NOBODY = 65534


def test_a_door_that_cannot_confine_a_command_does_not_start(tmp_path: Path) -> None:
    pki = SessionPKI.create()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "shell.sock"))
    listener.listen(4)
    memfd = os.memfd_create("sharness-test-svid", 0)
    os.write(memfd, pki.svid_pem("shell"))
    rows = {"workspace": "none", "home": "/", "tmp": "/tmp", "proxy": None}
    contract = DoorContract(role="shell", session_id=pki.session_id, trust_domain=pki.trust_domain,
                            edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(), rows=rows,
                            listen_fds={DOOR_LISTENER: listener.fileno()}, status_fd=theirs.fileno(),
                            svid_fd=memfd)
    try:
        process = subprocess.Popen([sys.executable, "-m", "doors"], cwd=ROOT, user=NOBODY, group=NOBODY,
                                   extra_groups=[], env={CONTRACT_ENV: contract.to_json(), "PATH": "/usr/bin:/bin"},
                                   pass_fds=(theirs.fileno(), memfd, listener.fileno()), stderr=subprocess.PIPE)
    finally:
        theirs.close()
        os.close(memfd)
        listener.close()
    try:
        ours.settimeout(60)
        message = json.loads(ours.recv(MAX_STATUS_BYTES))
        _, stderr = process.communicate(timeout=60)
    finally:
        ours.close()
    assert message["type"] == "fatal", message
    assert "cannot make a command cgroup" in message["detail"] and "delegates" in message["detail"], message
    assert process.returncode == 1, stderr
