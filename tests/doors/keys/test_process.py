"""The keys door as a real process (`python -m doors`): its secret arrives as an inherited fd, never a path;
hello reports `keys.secrets` held; releases open for the row's role only; a bad fd is the door's fatal error."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from doors import SecretFingerprint, SecretMatcher
from doors._contract import CONTRACT_ENV, DoorContract
from doors._refusal import DoorRefused
from doors._transport import AsyncDoorClient, Dial, client_context_from_file
from doors._transport.testing import scratch_dir
from doors.keys import MachineKey, release, seal_value
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES, DOOR_LISTENER, MAX_STATUS_BYTES

ROOT = Path(__file__).resolve().parents[3]
VALUE = b"sk-proc-" + os.urandom(16).hex().encode()
ROWS = {"anthropic": {"roles": ["model"], "hosts": ["api.anthropic.com"]}}


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    status: socket.socket
    path: str
    pki: SessionPKI
    directory: str

    def message(self) -> dict[str, object]:
        self.status.settimeout(30)
        return dict(json.loads(self.status.recv(MAX_STATUS_BYTES)))

    async def release_as(self, role: str, name: str = "anthropic", host: str = "api.anthropic.com") -> bytes:
        svid = self.pki.write_svid(role, self.directory)
        ctx = client_context_from_file(self.pki.bundle_pem(), svid)
        dial = Dial("keys", self.path, ctx, self.pki.trust_domain, self.pki.session_id, role)
        async with AsyncDoorClient(dial) as client:
            return await release(client, self.pki.identity(role).uri(), name, host)


def _rows(secret_fd: int, key_fd: int | None) -> dict[str, object]:
    if key_fd is None:
        return {"secrets": ROWS, "secret_fds": {"anthropic": secret_fd}}
    sealed = {"anthropic": {**ROWS["anthropic"], "sealed": "stored-name"}}
    return {"secrets": sealed, "secret_fds": {"anthropic": secret_fd}, "machine_key_fd": key_fd}


def _start(directory: str, secret_fd: int, key_fd: int | None = None) -> Running:
    """The keys door with one secret from `secret_fd`: sealed at rest when `key_fd` (the machine key) is given."""
    pki = SessionPKI.create()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = os.path.join(directory, "keys.sock")
    listener.bind(path)
    listener.listen(16)
    memfd = os.memfd_create("sharness-test-svid", 0)
    os.write(memfd, pki.svid_pem("keys"))
    contract = DoorContract(role="keys", session_id=pki.session_id, trust_domain=pki.trust_domain,
                            edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(),
                            rows=_rows(secret_fd, key_fd),
                            listen_fds={DOOR_LISTENER: listener.fileno()}, status_fd=theirs.fileno(), svid_fd=memfd)
    try:
        process = subprocess.Popen([sys.executable, "-m", "doors"], cwd=ROOT, stderr=subprocess.PIPE,
                                   env={CONTRACT_ENV: contract.to_json(), "PATH": "/usr/bin:/bin"},
                                   pass_fds=(theirs.fileno(), memfd, listener.fileno(), secret_fd,
                                             *([] if key_fd is None else [key_fd])))
    finally:
        theirs.close()
        os.close(memfd)
        listener.close()
    return Running(process, ours, path, pki, directory)


@pytest.fixture
def running() -> Iterator[Running]:
    with scratch_dir() as directory:
        source = Path(directory, "anthropic.key")
        source.write_bytes(VALUE + b"\n")
        fd = os.open(source, os.O_RDONLY)
        source.unlink()  # the door cannot have opened it by path: there is none
        door = _start(directory, fd)
        os.close(fd)
        try:
            yield door
        finally:
            if door.process.poll() is None:
                door.process.send_signal(signal.SIGTERM)
            door.process.wait(timeout=30)
            door.status.close()


def test_release_from_an_inherited_fd(running: Running) -> None:
    parts = [running.message(), running.message()]  # the fingerprint, one part per secret and the unmatched
    assert [part["type"] for part in parts] == ["fingerprint", "fingerprint"]
    fingerprint = SecretFingerprint.from_parts([part["fingerprint"] for part in parts])
    assert fingerprint.names == ("anthropic",) and VALUE.decode() not in json.dumps(parts)
    assert SecretMatcher(fingerprint).first(b"x" + VALUE + b"y") is not None
    assert running.message() == {"type": "ready"}
    assert trio.run(running.release_as, "model") == VALUE
    with pytest.raises(DoorRefused) as caught:
        trio.run(running.release_as, "net")
    assert caught.value.refusal.row == "keys.secrets.anthropic.roles"
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=30) == 0
    assert running.process.stderr is not None and VALUE not in running.process.stderr.read()
    seen = []
    running.status.setblocking(False)
    try:
        while message := running.status.recv(MAX_STATUS_BYTES):  # b"" once the door has closed its end
            seen.append(message)
    except BlockingIOError:
        pass
    assert seen and all(VALUE not in message for message in seen)  # audit events, never the value
    assert any(b'"keys.release"' in message for message in seen)


def test_an_unreadable_secret_fd_is_fatal_naming_it() -> None:
    with scratch_dir() as directory:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)  # read() on it fails: EISDIR
        door = _start(directory, fd)
        os.close(fd)
        try:
            message = door.message()
            assert message["type"] == "fatal" and "keys door failed" in str(message["detail"])
            assert door.process.wait(timeout=30) == 1
        finally:
            door.status.close()


def _fd_of(directory: str, name: str, data: bytes) -> int:
    """An fd on a file holding `data`, whose name is gone (the door can have no path to it)."""
    path = Path(directory, name)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    path.unlink()
    return fd


def _sealed_door(directory: str, spoil: int | None = None) -> Running:
    key = MachineKey.generate()
    sealed = bytearray(seal_value(key, "stored-name", VALUE, 1_800_000_000))
    if spoil is not None:
        sealed[spoil] ^= 0x01
    sealed_fd, key_fd = _fd_of(directory, "s.sealed", bytes(sealed)), _fd_of(directory, "machine.key",
                                                                              key.file_bytes())
    try:
        return _start(directory, sealed_fd, key_fd)
    finally:
        os.close(sealed_fd)
        os.close(key_fd)


def test_a_sealed_secret_is_opened_in_the_door_and_released() -> None:
    with scratch_dir() as directory:
        door = _sealed_door(directory)
        try:
            parts = [door.message(), door.message()]  # the fingerprint of the opened value comes first
            assert [part["type"] for part in parts] == ["fingerprint", "fingerprint"]
            fingerprint = SecretFingerprint.from_parts([part["fingerprint"] for part in parts])
            assert SecretMatcher(fingerprint).first(b"x" + VALUE + b"y") is not None
            assert door.message() == {"type": "ready"}
            assert trio.run(door.release_as, "model") == VALUE
        finally:
            door.process.send_signal(signal.SIGTERM)
            assert door.process.wait(timeout=30) == 0
            door.status.close()


def test_a_changed_sealed_secret_is_fatal_at_start_naming_the_row() -> None:
    with scratch_dir() as directory:
        door = _sealed_door(directory, spoil=-5)  # a byte of the AEAD tag
        try:
            message = door.message()
            assert message["type"] == "fatal", message
            detail = str(message["detail"])
            assert "doors.keys.secrets.anthropic.from" in detail and "changed since it was sealed" in detail
            assert VALUE.decode() not in detail
            assert door.process.wait(timeout=30) == 1
        finally:
            door.status.close()
