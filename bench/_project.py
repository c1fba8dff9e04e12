"""The project transport measured: the real door process (``python -m doors``), the project's clients here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from bench._load import LoadSpec
from bench._procs import REPO, Series, summary_with_cpu, timed
from bench._realdoor import real_door
from bench._stats import percentile, rate_per_s
from bench._tls import TlsOptions, pyopenssl_context
from doors import (
    AsyncDoorClient,
    ClientConnection,
    Dial,
    TlsContext,
    client_context_from_file,
    connect,
    exchange,
    fresh_exchange,
)
from doors.client import DoorClient, fresh_request

if TYPE_CHECKING:
    from bench.handshake import Counts, SessionFiles

CONCURRENCY = (1, 8, 64)
HELLO = "/v0/hello"


def _dial(files: SessionFiles, address: str, ctx: TlsContext | None = None) -> Dial:
    """A dial from the session's client SVID; `ctx` replaces the transport's own context (a studied one)."""
    ctx = ctx or client_context_from_file(files.pki.bundle_pem(), files.client.cert)
    return Dial(files.server_role, _address(address), ctx, files.pki.trust_domain, files.pki.session_id,
                files.client_role)


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


async def _fresh_tuned(dial: Dial, count: int, resume: bool) -> list[float]:
    """The proposed client fix: read the TLS session once (from the first connection) and offer that
    one ticket on every later connection, instead of reading ``ssl_object.session`` every time."""
    samples: list[float] = []
    session = None
    for _ in range(count):
        start = time.perf_counter_ns()
        tls = await connect(dial, tls_session=session)
        try:
            await exchange(tls, ClientConnection(dial.role), dial, "GET", HELLO)
            if resume and session is None:
                session = tls.ssl_object.session
        finally:
            await tls.aclose()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


async def _warm_tuned(dial: Dial, count: int) -> list[float]:
    """Kept-alive GETs through the transport's connect/exchange without the client's per-request work."""
    samples: list[float] = []
    tls = await connect(dial)
    http = ClientConnection(dial.role)
    try:
        for _ in range(count):
            start = time.perf_counter_ns()
            await exchange(tls, http, dial, "GET", HELLO)
            http.next_cycle()
            samples.append((time.perf_counter_ns() - start) / 1e6)
    finally:
        await tls.aclose()
    return samples


def _address(address: str) -> str | tuple[str, int]:
    return ("127.0.0.1", int(address[4:])) if address.startswith("tcp:") else address


def _fresh_sync(files: SessionFiles, address: str, count: int) -> list[float]:
    """The app's blocking client: ``doors.client.fresh_request`` with one reused context."""
    ctx = client_context_from_file(files.pki.bundle_pem(), files.client.cert)
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter_ns()
        fresh_request(_address(address), ctx, role=files.server_role, trust_domain=files.pki.trust_domain,
                      session_id=files.pki.session_id)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def _warm_sync(files: SessionFiles, address: str, count: int) -> list[float]:
    """The app's blocking DoorClient: GET /v0/hello again and again on its kept-alive connection."""
    samples: list[float] = []
    with DoorClient(_dial(files, address)) as client:
        for _ in range(count):
            start = time.perf_counter_ns()
            client.request("GET", HELLO)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


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


def _one_transport(files: SessionFiles, address: str, counts: Counts) -> dict[str, Series]:
    total = counts.fresh + counts.warmup
    with real_door(files.pki, files.server_role, address) as server:
        dial = _dial(files, server.address)
        return {
            "fresh": timed(server, counts.warmup, lambda: trio.run(_fresh, dial, total, False)),
            "resumed": timed(server, counts.warmup, lambda: trio.run(_fresh, dial, total, True)),
            "sync": timed(server, counts.warmup, lambda: _fresh_sync(files, server.address, total)),
        }


def _kept_alive(files: SessionFiles, address: str, counts: Counts) -> dict[str, Any]:
    total = counts.warm + counts.warmup
    with real_door(files.pki, files.server_role, address) as server:
        dial = _dial(files, server.address)
        warm = timed(server, counts.warmup, lambda: trio.run(_warm, dial, total))
        warm_sync = timed(server, counts.warmup, lambda: _warm_sync(files, server.address, total))
        throughput = _concurrency(files, server.address, counts.load_seconds)
    return {**summary_with_cpu("request_warm", warm), **summary_with_cpu("request_warm_sync", warm_sync), **throughput,
            "samples": {"kept-alive request": {"project async client GET /v0/hello, unix": warm.samples,
                                               "project sync DoorClient GET /v0/hello, unix": warm_sync.samples}}}


def _study(files: SessionFiles, address: str, counts: Counts) -> Series:
    """The best configuration the option study found (docs/decisions/bench.md): the real door (pyOpenSSL,
    X25519 first, the transport's default) and the async client on pyOpenSSL with X25519, reusing one ticket."""
    total = counts.fresh + counts.warmup
    client_ctx = pyopenssl_context(files.client, False, TlsOptions(group="X25519"))
    with real_door(files.pki, files.server_role, address) as server:
        dial = _dial(files, server.address, client_ctx)
        return timed(server, counts.warmup, lambda: trio.run(_fresh_tuned, dial, total, True))


def measure(files: SessionFiles, workdir: Path, counts: Counts) -> dict[str, Any]:
    """Fresh and resumed connections over Unix and TCP, kept-alive requests, and throughput under load."""
    unix = str(workdir / "sh-bench-door.sock")
    on_unix = _one_transport(files, unix, counts)
    Path(unix).unlink()
    on_tcp = _one_transport(files, "tcp:0", counts)
    Path(unix).unlink(missing_ok=True)
    figures: dict[str, Any] = {}
    for transport, series in (("unix", on_unix), ("tcp", on_tcp)):
        figures.update(summary_with_cpu(f"handshake_fresh_{transport}", series["fresh"]))
        figures.update(summary_with_cpu(f"handshake_resumed_{transport}", series["resumed"]))
        figures.update(summary_with_cpu(f"handshake_fresh_sync_{transport}", series["sync"]))
    figures["handshake_fresh_p99_ms"] = figures["handshake_fresh_unix_p99_ms"]
    figures.update(_kept_alive(files, unix, counts))
    Path(unix).unlink(missing_ok=True)
    study = _study(files, unix, counts)
    figures.update(summary_with_cpu("study_pyopenssl_x25519_one_ticket_unix", study))
    figures["samples"]["fresh handshake"] = {
        "study: pyOpenSSL X25519, one ticket reused, unix": study.samples,
        "project async, unix": on_unix["fresh"].samples, "project async, tcp": on_tcp["fresh"].samples,
        "project async resumed, unix": on_unix["resumed"].samples,
        "project sync client, unix": on_unix["sync"].samples,
    }
    return figures
