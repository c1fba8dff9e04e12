"""The daemon under `systemd-socket-activate` (systemd's own activation, without systemd as PID 1): it takes
the passed socket (LISTEN_FDS/LISTEN_FDNAMES for its own pid), tells a test NOTIFY_SOCKET READY and STATUS
(with its own credentials), WATCHDOG and STOPPING, runs a non-root caller's session, and refuses one the
policy lacks."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import threading

import pytest
from _launchd import NOBODY, Daemon, Scratch, policy_document

from launcher.daemon.systemd import ActivationError, listen_fds

ACTIVATE = shutil.which("systemd-socket-activate")
pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(ACTIVATE is None, reason="systemd-socket-activate is not installed")]
_UCRED = struct.Struct("iII")


class Listener(threading.Thread):
    """Reads the notify socket as systemd would, all along (its queue holds only a few datagrams)."""

    def __init__(self, notify: socket.socket) -> None:
        super().__init__(daemon=True)
        self.notify = notify
        self.received: list[tuple[int, str]] = []  # (sender pid from SCM_CREDENTIALS, text)

    def run(self) -> None:
        while True:
            try:
                data, ancillary, _, _ = self.notify.recvmsg(4096, socket.CMSG_SPACE(_UCRED.size))
            except OSError:
                return
            if not data:
                return
            pids = [_UCRED.unpack(payload[: _UCRED.size])[0] for level, kind, payload in ancillary
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
            self.received.append((pids[0] if pids else -1, data.decode()))


def test_the_daemon_runs_socket_activated_and_notifies(scratch: Scratch) -> None:
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    notify.bind(str(scratch.path / "notify.sock"))
    listener = Listener(notify)
    listener.start()
    daemon = Daemon(scratch, policy_document({"uid": NOBODY}),
                    argv_prefix=(str(ACTIVATE), "-l", str(scratch.path / "launchd.sock"), "--fdname=launchd",
                                 "-E", f"NOTIFY_SOCKET={scratch.path / 'notify.sock'}", "-E", "PATH",
                                 "-E", "WATCHDOG_USEC=200000"))
    daemon.process = subprocess.Popen(daemon.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
    try:
        while not daemon.socket.exists():  # systemd-socket-activate made it; the daemon runs on the first connect
            assert daemon.process.poll() is None
        os.chmod(daemon.socket, 0o666)  # what the unit's SocketMode= does
        manifest, digest = scratch.manifest("activated", scratch.workspace("ws", NOBODY), ["/bin/sh", "-c", "exit 3"])
        done = daemon.run(NOBODY, str(manifest), "--expect-hash", digest)
        assert done.returncode == 3, done.stderr
        refused = daemon.run(2, str(manifest), "--expect-hash", digest)
        assert refused.returncode == 77 and "uid 2 is not a principal" in refused.stderr
        seen = list(listener.received)
        assert seen and seen[0][1].startswith("READY=1\nSTATUS=0 session(s) running"), seen
        assert {pid for pid, _ in seen} == {daemon.process.pid}  # it exec'd in place: the notifier is the daemon
        assert any("STATUS=1 session(s) running" in text for _, text in seen)
        assert any(text == "WATCHDOG=1" for _, text in seen)  # every WATCHDOG_USEC/2 while it serves
    finally:
        err = daemon.stop(signal.SIGTERM)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as waker:
            waker.sendto(b"", str(scratch.path / "notify.sock"))  # the empty datagram ends the listener
        listener.join(timeout=30)
        notify.close()
    assert '"activated":true' in err, err
    assert any(text.startswith("STOPPING=1") for _, text in listener.received)


@pytest.mark.parametrize(("environ", "words"), [
    ({"LISTEN_FDS": "1"}, "not this process"),
    ({"LISTEN_FDS": "1", "LISTEN_PID": "1"}, "not this process"),
    ({"LISTEN_FDS": "x", "LISTEN_PID": "42"}, "not a number"),
    ({"LISTEN_FDS": "2", "LISTEN_PID": "42", "LISTEN_FDNAMES": "launchd"}, "names 1 fds"),
])
def test_activation_meant_for_another_process_is_refused(environ: dict[str, str], words: str) -> None:
    with pytest.raises(ActivationError, match=words):
        listen_fds(environ, 42)


def test_activation_for_this_process_names_its_fds() -> None:
    assert listen_fds({}, 42) == {}
    assert listen_fds({"LISTEN_FDS": "2", "LISTEN_PID": "42", "LISTEN_FDNAMES": "launchd:other"}, 42) == {
        "launchd": 3, "other": 4}
