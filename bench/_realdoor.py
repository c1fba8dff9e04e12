"""The real door process, as the launcher starts it: ``python -m doors`` with the fd contract.

fd 3 is a SOCK_SEQPACKET status socket (a thread here drains and counts it, as the launcher would),
fd 4 a memfd holding the SVID, fd 5 the listener; the description is in SHARNESS_DOOR_CONTRACT.
No confinement and no other user: this measures the transport and the audit pump, not the kernel.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from bench._procs import READY_TIMEOUT_S, REPO, Server
from bench._servers import listen
from doors._contract import CONTRACT_ENV, STATUS_FD, SVID_FD, DoorContract
from pki.edges import DEFAULT_EDGES
from pki.testing import SessionPKI

LISTEN_FD = 5


@dataclass
class StatusTally:
    """What the door told its launcher: ready seen, audit events counted."""

    ready: threading.Event = field(default_factory=threading.Event)
    audit_events: int = 0
    other: list[dict[str, object]] = field(default_factory=list)


def _drain(sock: socket.socket, tally: StatusTally) -> None:
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            return
        if not data:
            return
        message = json.loads(data)
        if message.get("type") == "ready":
            tally.ready.set()
        elif message.get("type") == "audit":
            tally.audit_events += 1
        else:
            tally.other.append(message)


def _svid_memfd(pki: SessionPKI, role: str) -> int:
    fd = os.memfd_create(f"sh-bench-svid-{role}", os.MFD_CLOEXEC)
    os.write(fd, pki.svid_pem(role))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _place(fds: dict[int, int]) -> None:
    """In the child before exec: move each fd to its contract number (dup2 clears close-on-exec).

    First out of the way (a source may sit on another's target number), then into place.
    """
    parked = {target: 100 + index for index, target in enumerate(fds)}
    for target, source in fds.items():
        os.dup2(source, parked[target])
    for target, spare in parked.items():
        os.dup2(spare, target)
        os.close(spare)


@contextmanager
def real_door(pki: SessionPKI, role: str, address: str, argv: tuple[str, ...] = ("-m", "doors")) -> Iterator[Server]:
    """Start the generic door for ``role`` on ``address`` (Unix path or ``tcp:0``); yield where it is.

    ``argv`` (after the interpreter) may name another entry with the same contract, e.g. the study's
    ``-m bench._pyossl_door X25519``.
    """
    listener = listen(address)
    reachable = f"tcp:{listener.getsockname()[1]}" if address.startswith("tcp:") else address
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    svid = _svid_memfd(pki, role)
    contract = DoorContract(role=role, session_id=pki.session_id, trust_domain=pki.trust_domain,
                            edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(),
                            listen_fds={"door": LISTEN_FD})
    env = {**os.environ, CONTRACT_ENV: contract.to_json(), "PYTHONPATH": str(REPO)}
    fds = {STATUS_FD: theirs.fileno(), SVID_FD: svid, LISTEN_FD: listener.fileno()}
    proc = subprocess.Popen([sys.executable, *argv], env=env, cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, pass_fds=tuple(fds),
                            preexec_fn=lambda: _place(fds))
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
