"""The project transport measured: serve_mtls in its own process, the project's clients in this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from bench._door import DoorSpec
from bench._load import LoadSpec
from bench._procs import REPO, server_process
from bench._stats import percentile, rate_per_s, summarize
from doors._transport import AsyncDoorClient, Dial, client_context_from_file, fresh_exchange

if TYPE_CHECKING:
    from bench.handshake import Counts, SessionFiles

CONCURRENCY = (1, 8, 64)
HELLO = "/v0/hello"


def _dial(files: SessionFiles, address: str) -> Dial:
    ctx = client_context_from_file(files.pki.bundle_pem(), files.client.cert)
    where: str | tuple[str, int] = ("127.0.0.1", int(address[4:])) if address.startswith("tcp:") else address
    return Dial(files.server_role, where, ctx, files.pki.trust_domain, files.pki.session_id, files.client_role)


async def _fresh(dial: Dial, count: int, resume: bool) -> list[float]:
    samples: list[float] = []
    session = None
    for _ in range(count):
        start = time.perf_counter_ns()
        _, latest = await fresh_exchange(dial, "GET", HELLO, tls_session=session)
        samples.append((time.perf_counter_ns() - start) / 1e6)
        session = latest if resume else None
    return samples


async def _warm(dial: Dial, count: int) -> list[float]:
    samples: list[float] = []
    async with AsyncDoorClient(dial) as client:
        for _ in range(count):
            start = time.perf_counter_ns()
            await client.request("GET", HELLO)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def _door_spec(files: SessionFiles, address: str) -> DoorSpec:
    return DoorSpec(files.server_role, address, str(files.server.cert), str(files.server.bundle),
                    files.pki.trust_domain, files.pki.session_id)


def _load(files: SessionFiles, address: str, clients: int, seconds: float) -> dict[str, Any]:
    spec = LoadSpec(address, clients, seconds, files.server_role, files.client_role, str(files.client.cert),
                    str(files.client.bundle), files.pki.trust_domain, files.pki.session_id)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "bench._load", spec.to_json()], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=seconds + 60, check=True)
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


def _concurrency(files: SessionFiles, address: str, seconds: float) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for clients in CONCURRENCY:
        outcome = _load(files, address, clients, seconds)
        latencies = outcome["latencies_ms"]
        noun = "client" if clients == 1 else "clients"
        figures[f"handshakes_per_s_{clients}_{noun}"] = rate_per_s(outcome["completed"], outcome["elapsed_s"])
        figures[f"handshakes_{clients}_{noun}_n"] = outcome["completed"]
        figures[f"handshakes_{clients}_{noun}_p50_ms"] = round(percentile(latencies, 50), 4)
        figures[f"handshakes_{clients}_{noun}_p90_ms"] = round(percentile(latencies, 90), 4)
    return figures


def _one_transport(files: SessionFiles, address: str, counts: Counts) -> tuple[list[float], list[float]]:
    with server_process("bench._door", _door_spec(files, address).to_json(), address) as reachable:
        dial = _dial(files, reachable)
        fresh = trio.run(_fresh, dial, counts.fresh + counts.warmup, False)[counts.warmup :]
        resumed = trio.run(_fresh, dial, counts.fresh + counts.warmup, True)[counts.warmup :]
    return fresh, resumed


def measure(files: SessionFiles, workdir: Path, counts: Counts) -> dict[str, Any]:
    """Fresh and resumed connections over Unix and TCP, kept-alive requests, and throughput under load."""
    unix = str(workdir / "sh-bench-door.sock")
    unix_fresh, unix_resumed = _one_transport(files, unix, counts)
    Path(unix).unlink()
    tcp_fresh, tcp_resumed = _one_transport(files, "tcp:0", counts)
    with server_process("bench._door", _door_spec(files, unix).to_json(), unix) as reachable:
        warm = trio.run(_warm, _dial(files, reachable), counts.warm + counts.warmup)[counts.warmup :]
        throughput = _concurrency(files, reachable, counts.load_seconds)
    figures: dict[str, Any] = {
        **summarize("handshake_fresh_unix", unix_fresh),
        **summarize("handshake_fresh_tcp", tcp_fresh),
        **summarize("handshake_resumed_unix", unix_resumed),
        **summarize("handshake_resumed_tcp", tcp_resumed),
        **summarize("request_warm", warm),
        **throughput,
    }
    figures["handshake_fresh_p99_ms"] = figures["handshake_fresh_unix_p99_ms"]
    figures["samples"] = {
        "fresh handshake": {"project, unix": unix_fresh, "project, tcp": tcp_fresh,
                            "project resumed, unix": unix_resumed},
        "kept-alive request": {"project GET /v0/hello, unix": warm},
    }
    return figures
