"""Doors started by fork from a process holding the launcher's imports, or by exec (`python -m doors`).

Run as a helper by bench.session_bench: `python -m bench._session_doors N` prints JSON with, for each way,
ms to ready (the door's status message) and to its first hello answered, its PSS and the PSS it added (kB).
The door is the same generic one both ways (role keys, `run_door`), unconfined: confinement costs the same
either way and is in the session figures.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER_MODULES = (
    "launcher.cli",
    "launcher.policy.plan",
    "launcher.kernel.probe",
    "launcher.lifecycle.sweep",
    "launcher.lifecycle.session",
)
WAYS = ("fork", "exec", "fork_frozen")  # fork_frozen: forked after gc.freeze() in the helper


def pss_kb(smaps_rollup: str) -> int:
    """The Pss line of /proc/PID/smaps_rollup, in kB."""
    match = re.search(r"^Pss:\s+(\d+) kB", smaps_rollup, re.MULTILINE)
    if match is None:
        raise ValueError("no Pss line in smaps_rollup")
    return int(match.group(1))


def read_pss(pid: int) -> int:
    """The PSS of process `pid`, in kB."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        return pss_kb(rollup.read())


@dataclass
class DoorKit:
    """One session's PKI and a client context (role net) for the doors the helper starts, in `directory`."""

    directory: str
    pki: Any
    ctx: Any
    started: int = 0


def _door_kit(directory: str) -> DoorKit:
    from doors import client_context_from_file
    from pki.testing import SessionPKI

    pki = SessionPKI.create()
    return DoorKit(directory, pki, client_context_from_file(pki.bundle_pem(), pki.write_svid("net", directory)))


def _start_door(kit: DoorKit, how: str, contract_of: Callable[[int, int, int], Any]) -> tuple[int, socket.socket]:
    """Fork or exec one generic door (role keys) with its fd contract; its pid and the launcher's status end."""
    import doors.serve
    from doors import CONTRACT_ENV

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(kit.directory, f"door{kit.started}.sock"))
    listener.listen(16)
    memfd = os.memfd_create("sharness-bench-svid", 0)
    os.write(memfd, kit.pki.svid_pem("keys"))
    contract = contract_of(theirs.fileno(), memfd, listener.fileno())
    if how.startswith("fork"):
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                doors.serve.serve(contract)
            finally:
                os._exit(0)
    else:
        env = {CONTRACT_ENV: contract.to_json(), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        pid = subprocess.Popen([sys.executable, "-m", "doors"], env=env, cwd=ROOT,
                               pass_fds=(theirs.fileno(), memfd, listener.fileno())).pid
    theirs.close()
    listener.close()
    os.close(memfd)
    return pid, ours


def _one_door(kit: DoorKit, how: str) -> dict[str, float]:
    """One door by `how`: ms to ready and to its first hello answered; its PSS and the PSS it added (kB)."""
    from doors import DoorContract
    from doors.client import Dial, DoorClient
    from pki.vocabulary import DOOR_LISTENER, FINGERPRINT, MAX_STATUS_BYTES, READY, decode_status

    def contract_of(status_fd: int, svid_fd: int, listen_fd: int) -> DoorContract:
        return DoorContract(role="keys", session_id=kit.pki.session_id, trust_domain=kit.pki.trust_domain,
                            edges=(("net", "keys"),), bundle_pem=kit.pki.bundle_pem().decode(),
                            listen_fds={DOOR_LISTENER: listen_fd}, status_fd=status_fd, svid_fd=svid_fd)

    client = DoorClient(Dial("keys", os.path.join(kit.directory, f"door{kit.started}.sock"), kit.ctx,
                             kit.pki.trust_domain, kit.pki.session_id, "net"))
    before = read_pss(os.getpid())
    start = time.perf_counter()
    pid, status = _start_door(kit, how, contract_of)
    kit.started += 1
    try:
        status.settimeout(30)
        message = decode_status(status.recv(MAX_STATUS_BYTES)) or {}
        while message.get("type") == FINGERPRINT:  # the keys door's fingerprint parts come before ready
            message = decode_status(status.recv(MAX_STATUS_BYTES)) or {}
        ready = (time.perf_counter() - start) * 1000
        if message.get("type") != READY:
            raise RuntimeError(f"the bench door ({how}) did not report ready: {message}")
        client.hello()
        hello = (time.perf_counter() - start) * 1000
        child = read_pss(pid)
        return {"ready_ms": ready, "hello_ms": hello, "pss_kb": child,
                "marginal_kb": child + read_pss(os.getpid()) - before}
    finally:
        client.close()
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        status.close()


def doors_helper(count: int) -> dict[str, Any]:
    """In the helper: the launcher's imports, then `count` doors by fork and by exec, alternating; then
    `count` forked after gc.freeze() (what a pre-fork server does to keep the parent's pages shared)."""
    for module in LAUNCHER_MODULES:  # the same imports the launcher holds when it forks its doors
        importlib.import_module(module)
    doors_serve = importlib.import_module("doors.serve")
    doors_serve.preload(("keys",))  # as a session preloads its own doors' code before it forks them
    directory = tempfile.mkdtemp(prefix="sharness-bench-doors-")
    try:
        kit = _door_kit(directory)
        results: dict[str, Any] = {"zygote_pss_kb": read_pss(os.getpid())}
        order = [way for index in range(count) for way in (WAYS[:2] if index % 2 == 0 else WAYS[1::-1])]
        gc.collect()
        for number, how in enumerate(order + [WAYS[2]] * count):
            if number == len(order):
                gc.freeze()
            for name, value in _one_door(kit, how).items():
                results.setdefault(f"{how}_{name}", []).append(value)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    count = int((sys.argv[1:] if argv is None else argv)[0])
    print(json.dumps(doors_helper(count)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
