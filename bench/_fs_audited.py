"""The fs door's stat rate when every request is audited as in a session, beside the same load unaudited.

Audited: the real fs door (`doors.serve.serve`: its audit queue, the pump on its status fd) in its own
process, and in this process the launcher's own Supervisor and AuditLog (every pending status message per
round, one fsync per round). Unaudited: fs_bench's door, whose audit sink discards. Either way LOOPS client
processes each stat one file on a kept-alive connection, as four agent tool loops would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

LOOPS = 4
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVE = "from doors._contract import DoorContract; from doors.serve import serve; serve(DoorContract.from_environ())"


@dataclass(frozen=True)
class DoorAddress:
    """What a client needs to reach a door as the app."""

    socket_path: str
    svid_path: str
    bundle_path: str
    trust_domain: str
    session_id: str


def _stat_loop(door: DoorAddress, count: int, result_fd: int) -> None:
    """In a client process: `count` stats on one connection; the statuses seen, as JSON on `result_fd`."""
    from doors.client import DoorClient

    statuses: Counter[int] = Counter()
    with DoorClient.from_files("fs", door.socket_path, door.svid_path, door.bundle_path, door.trust_domain,
                               door.session_id, timeout_s=300) as client:
        for _ in range(count):
            statuses[client.request("GET", "/v0/fs/stat/seed").status] += 1
    os.write(result_fd, json.dumps(statuses).encode())


def _clients(door: DoorAddress, count: int) -> tuple[int, int]:
    """A process that runs LOOPS stat loops and exits when they are done: (pid, fd of the statuses)."""
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(result_w)
        return pid, result_r
    try:  # the "app": only ever returns through os._exit
        signal.set_wakeup_fd(-1)
        loops = []
        for _ in range(LOOPS):
            loop_r, loop_w = os.pipe()
            if (child := os.fork()) == 0:
                _stat_loop(door, count, loop_w)
                os._exit(0)
            os.close(loop_w)
            loops.append((child, loop_r))
        total: Counter[str] = Counter()
        for child, loop_r in loops:
            with os.fdopen(loop_r, "rb") as result:
                total.update(json.loads(result.read() or b"{}"))
            os.waitpid(child, 0)
        os.write(result_w, json.dumps(total).encode())
    finally:
        os._exit(0)


def _statuses(result_r: int) -> Counter[str]:
    with os.fdopen(result_r, "rb") as result:
        return Counter(json.loads(result.read() or b"{}"))


def unaudited_rate(door: DoorAddress, count: int) -> float:
    """Stats per second of LOOPS loops against a door whose audit sink discards."""
    start = time.perf_counter()
    pid, result_r = _clients(door, count)
    statuses = _statuses(result_r)
    os.waitpid(pid, 0)
    return sum(statuses.values()) / (time.perf_counter() - start)


def _spawn_door(directory: str, workspace: str) -> tuple[subprocess.Popen[bytes], socket.socket, DoorAddress]:
    """The real fs door from a contract, as the launcher would fork it (unconfined here)."""
    from doors import CONTRACT_ENV, DoorContract
    from pki.edges import DEFAULT_EDGES
    from pki.testing import SessionPKI

    pki = SessionPKI.create()
    bundle = os.path.join(directory, "bundle.pem")
    with open(bundle, "wb") as out:
        out.write(pki.bundle_pem())
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(directory, "fs.sock"))
    listener.listen(64)
    memfd = os.memfd_create("sharness-bench-svid", 0)
    os.write(memfd, pki.svid_pem("fs"))
    rows = {"workspace": workspace, "max_file_bytes": 1 << 40, "max_total_bytes": 1 << 50, "max_files": 1 << 40}
    contract = DoorContract(role="fs", session_id=pki.session_id, trust_domain=pki.trust_domain,
                            edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(), rows=rows,
                            listen_fds={"door": listener.fileno()}, status_fd=theirs.fileno(), svid_fd=memfd)
    process = subprocess.Popen([sys.executable, "-c", SERVE], cwd=ROOT, env={CONTRACT_ENV: contract.to_json()},
                               pass_fds=(theirs.fileno(), memfd, listener.fileno()))
    for closing in (theirs, listener):
        closing.close()
    os.close(memfd)
    address = DoorAddress(os.path.join(directory, "fs.sock"), pki.write_svid("app", directory), bundle,
                          pki.trust_domain, pki.session_id)
    return process, ours, address


def audited(directory: str, workspace: str, count: int) -> dict[str, Any]:
    """LOOPS stat loops against the real door, its events written by the launcher's Supervisor and AuditLog."""
    from launcher.lifecycle.audit import AuditLog
    from launcher.lifecycle.spawn import Spawned
    from launcher.lifecycle.supervise import Supervisor

    process, status, door = _spawn_door(directory, workspace)
    log = AuditLog.create(os.path.join(directory, "audit"), door.session_id)
    lost: list[int] = []

    def on_audit(event: str, fields: dict[str, object]) -> None:
        if event == "audit.lost":
            lost.append(int(str(fields["count"])))
        log.append({**fields, "event": event})

    supervisor = Supervisor(on_audit, on_round_end=log.commit)
    try:
        supervisor.watch(Spawned("fs", process.pid, os.pidfd_open(process.pid), status))
        if supervisor.wait_ready(("fs",), 60) is not None:
            raise RuntimeError("the bench's fs door did not report ready")
        start = time.perf_counter()
        pid, result_r = _clients(door, count)
        supervisor.watch(Spawned("app", pid, os.pidfd_open(pid), None))
        supervisor.run_until_end("app", time.monotonic() + 3600)
        seconds = time.perf_counter() - start
        statuses = _statuses(result_r)
        for role in ("app", "fs"):
            supervisor.stop(role, 10)
        supervisor.drain_statuses()
    finally:
        supervisor.close()
        if process.poll() is None:
            process.kill()
        process.wait()
    log.close()
    stats = log.statistics()
    return {"rate": statuses["200"] / seconds, "refused_503": statuses["503"], "lost": sum(lost),
            "lines_per_commit": stats.lines / max(1, stats.commits)}
