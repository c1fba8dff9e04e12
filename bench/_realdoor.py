"""The real door process, as the launcher starts it: ``python -m doors`` with the fd contract.

A SOCK_SEQPACKET status socket (a thread here drains and counts it, as the launcher would), a memfd
holding the SVID, and the listener; their numbers and the rest are in SHARNESS_DOOR_CONTRACT.
No confinement and no other user: this measures the transport and the audit pump, not the kernel.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from bench._procs import READY_TIMEOUT_S, REPO, Server
from bench._servers import listen
from doors import CONTRACT_ENV, DoorContract
from pki.testing import SessionPKI
from pki.vocabulary import AUDIT, DEFAULT_EDGES, DOOR_LISTENER, MAX_STATUS_BYTES, READY, decode_status


@dataclass
class StatusTally:
    """What the door told its launcher: ready seen, audit events counted."""

    ready: threading.Event = field(default_factory=threading.Event)
    audit_events: int = 0
    other: list[dict[str, object]] = field(default_factory=list)


def _drain(sock: socket.socket, tally: StatusTally) -> None:
    while True:
        try:
            data = sock.recv(MAX_STATUS_BYTES)
        except OSError:
            return
        if not data:
            return
        message = decode_status(data) or {}
        if message.get("type") == READY:
            tally.ready.set()
        elif message.get("type") == AUDIT:
            tally.audit_events += 1
        else:
            tally.other.append(message)


def _svid_memfd(pki: SessionPKI, role: str) -> int:
    fd = os.memfd_create(f"sh-bench-svid-{role}", os.MFD_CLOEXEC)
    os.write(fd, pki.svid_pem(role))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@contextmanager
def real_door(pki: SessionPKI, role: str, address: str, rows: dict[str, object] | None = None,
              extra_fds: tuple[int, ...] = ()) -> Iterator[Server]:
    """Start the door for ``role`` on ``address`` (Unix path or ``tcp:0``); yield where it is.

    ``python -m doors`` starts the door the role names (the fs door over an empty scratch workspace for fs).
    ``rows`` are its contract's rows and ``extra_fds`` what they name (the keys door's secret sources).
    """
    listener = listen(address)
    reachable = f"tcp:{listener.getsockname()[1]}" if address.startswith("tcp:") else address
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    svid = _svid_memfd(pki, role)
    workspace = tempfile.mkdtemp(prefix="sharness-bench-workspace-")
    # The contract names its fds, so they are passed where they are (no preexec_fn, which is unsafe
    # with drain threads running); placing them at 3, 4 and 5 is the launcher's job.
    contract = DoorContract(role=role, session_id=pki.session_id, trust_domain=pki.trust_domain,
                            edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(),
                            rows={"workspace": workspace} if role == "fs" else dict(rows or {}),
                            listen_fds={DOOR_LISTENER: listener.fileno()}, status_fd=theirs.fileno(), svid_fd=svid)
    env = {**os.environ, CONTRACT_ENV: contract.to_json(), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "doors"], env=env, cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, pass_fds=(theirs.fileno(), svid, listener.fileno(), *extra_fds))
    os.close(svid)
    theirs.close()
    listener.close()
    tally = StatusTally()
    drainer = threading.Thread(target=_drain, args=(ours, tally), daemon=True)
    drainer.start()
    try:
        if not tally.ready.wait(READY_TIMEOUT_S):
            raise RuntimeError(f"bench: the {role} door did not report ready (status: {tally.other})")
        yield Server(reachable, proc.pid)
    finally:
        proc.kill()
        proc.wait()
        ours.close()
        drainer.join(timeout=5)
        shutil.rmtree(workspace, ignore_errors=True)
