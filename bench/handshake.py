"""The handshake-latency part: the project transport beside a stdlib-ssl pair and openssl, plus minting.

Every figure is between two processes: the server runs in its own process, the client in this one.
A fresh handshake is timed from connect() until the client holds the server's first byte after the
handshake (TLS 1.3 tells a client it was refused only when it reads, so that read is part of it).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import _mint, _openssl, _project
from bench._certs import CertFiles
from bench._clients import fresh_stdlib, warm_http, warm_stdlib
from bench._procs import Series, server_process, summary_with_cpu, timed
from bench._servers import ServerSpec
from bench._tls import TlsOptions, stdlib_context
from pki.testing import SessionPKI

SERVER_ROLE, CLIENT_ROLE = "fs", "app"
TARGET_FRESH_P50_MS = 2.0
TARGET_WARM_P50_MS = 0.15

REQUIRED_KEYS = (
    "handshake_fresh_unix_p50_ms",
    "handshake_fresh_tcp_p50_ms",
    "handshake_fresh_p99_ms",
    "request_warm_p50_ms",
    "floor_h11_warm_p50_ms",
    "baseline_stdlib_fresh_p50_ms",
    "baseline_openssl_fresh_p50_ms",
    "ca_and_svids_ms",
    "handshakes_per_s_1_client",
    "handshakes_per_s_8_clients",
    "handshakes_per_s_64_clients",
)
RATIOS: tuple[tuple[str, str], ...] = (
    ("handshake_fresh_unix_p50_ms", "baseline_stdlib_fresh_unix_p50_ms"),
    ("handshake_fresh_unix_p50_ms", "target_handshake_fresh_p50_ms"),
    ("handshake_fresh_unix_server_cpu_ms", "baseline_stdlib_fresh_unix_server_cpu_ms"),
    ("handshake_fresh_unix_client_cpu_ms", "baseline_stdlib_fresh_unix_client_cpu_ms"),
    ("handshake_resumed_unix_p50_ms", "target_handshake_fresh_p50_ms"),
    ("study_pyopenssl_x25519_one_ticket_unix_p50_ms", "target_handshake_fresh_p50_ms"),
    ("study_pyopenssl_x25519_one_ticket_unix_p50_ms", "handshake_fresh_unix_p50_ms"),
    ("handshake_fresh_sync_unix_p50_ms", "baseline_stdlib_fresh_unix_p50_ms"),
    ("handshake_fresh_sync_unix_p50_ms", "target_handshake_fresh_p50_ms"),
    ("handshake_fresh_tcp_p50_ms", "baseline_stdlib_fresh_tcp_p50_ms"),
    ("handshake_fresh_tcp_p50_ms", "baseline_openssl_fresh_p50_ms"),
    ("handshake_fresh_p99_ms", "baseline_stdlib_fresh_unix_p99_ms"),
    ("request_warm_p50_ms", "baseline_stdlib_warm_p50_ms"),
    ("request_warm_p50_ms", "target_request_warm_p50_ms"),
    ("request_warm_sync_p50_ms", "baseline_stdlib_warm_p50_ms"),
    ("request_warm_sync_p50_ms", "target_request_warm_p50_ms"),
    ("request_warm_sync_p50_ms", "floor_h11_warm_p50_ms"),
    ("request_warm_p50_ms", "floor_h11_warm_p50_ms"),
    ("floor_h11_warm_p50_ms", "target_request_warm_p50_ms"),
    ("ca_and_svids_ms", "pki_in_process_ms"),
)


@dataclass(frozen=True)
class Counts:
    """How much each measurement does; warm-up samples are dropped before the statistics."""

    fresh: int
    warm: int
    warmup: int
    load_seconds: float
    openssl_seconds: int
    mint_repeats: int


FULL = Counts(fresh=1000, warm=3000, warmup=30, load_seconds=3.0, openssl_seconds=5, mint_repeats=10)
QUICK = Counts(fresh=150, warm=400, warmup=10, load_seconds=1.0, openssl_seconds=1, mint_repeats=3)


@dataclass(frozen=True)
class SessionFiles:
    """One session's certificates on disk: the door's and the client's key+leaf files, the bundle."""

    pki: SessionPKI
    server: CertFiles
    client: CertFiles
    server_role: str = SERVER_ROLE
    client_role: str = CLIENT_ROLE


def session_files(directory: Path) -> SessionFiles:
    """Mint a session with the project's PKI and write the two SVIDs the bench pairs use."""
    pki = SessionPKI.create(_mint.TRUST_DOMAIN, _mint.SESSION_ID, (SERVER_ROLE, CLIENT_ROLE), 3600)
    bundle = directory / "bundle.pem"
    bundle.write_bytes(pki.bundle_pem())
    server, client = (Path(pki.write_svid(role, directory)) for role in (SERVER_ROLE, CLIENT_ROLE))
    return SessionFiles(pki, CertFiles(server, server, bundle), CertFiles(client, client, bundle))


def stdlib_pair(files: SessionFiles, address: str, counts: Counts) -> tuple[Series, Series]:
    """Fresh handshakes and kept-alive round trips against a blocking stdlib server in its own process."""
    spec = ServerSpec("stdlib", address, str(files.server.cert), str(files.server.key), str(files.server.bundle))
    with server_process("bench._servers", spec.to_json(), address) as server:
        ctx = stdlib_context(files.client, server=False, options=TlsOptions())
        fresh = timed(server, counts.warmup, lambda: fresh_stdlib(server.address, ctx, counts.fresh + counts.warmup))
        warm = timed(server, counts.warmup, lambda: warm_stdlib(server.address, ctx, counts.warm + counts.warmup))
    return fresh, warm


def h11_floor(files: SessionFiles, address: str, counts: Counts) -> Series:
    """Kept-alive GETs with h11 on both sides over blocking stdlib TLS and no door: the framing's own floor."""
    spec = ServerSpec("h11", address, str(files.server.cert), str(files.server.key), str(files.server.bundle))
    with server_process("bench._servers", spec.to_json(), address) as server:
        ctx = stdlib_context(files.client, server=False, options=TlsOptions())
        return timed(server, counts.warmup, lambda: warm_http(server.address, ctx, counts.warm + counts.warmup))


def _baselines(files: SessionFiles, workdir: Path, counts: Counts) -> dict[str, Any]:
    unix_fresh, unix_warm = stdlib_pair(files, str(workdir / "sh-bench-stdlib.sock"), counts)
    floor_warm = h11_floor(files, str(workdir / "sh-bench-h11.sock"), counts)
    tcp_fresh, _ = stdlib_pair(files, "tcp:0", counts)
    openssl = _openssl.measure(files.server, files.client, workdir, counts.openssl_seconds)
    figures: dict[str, Any] = {
        **summary_with_cpu("baseline_stdlib_fresh_unix", unix_fresh),
        **summary_with_cpu("baseline_stdlib_fresh_tcp", tcp_fresh),
        **summary_with_cpu("baseline_stdlib_warm", unix_warm),
        **summary_with_cpu("floor_h11_warm", floor_warm),
        "baseline_openssl_fresh_p50_ms": round(openssl.per_handshake_ms(), 4),
        "baseline_openssl_fresh_client_cpu_ms": round(openssl.client_cpu_ms(), 4),
        "baseline_openssl_fresh_n": openssl.connections,
    }
    figures["baseline_stdlib_fresh_p50_ms"] = figures["baseline_stdlib_fresh_unix_p50_ms"]
    figures["samples"] = {
        "fresh handshake": {"stdlib pair, unix": unix_fresh.samples, "stdlib pair, tcp": tcp_fresh.samples},
        "kept-alive request": {"stdlib pair, 64-byte echo, unix": unix_warm.samples,
                               "h11 both sides on stdlib TLS, no door, unix": floor_warm.samples},
    }
    return figures


def _merge_samples(into: dict[str, Any], more: dict[str, Any]) -> None:
    for panel, series in more.pop("samples", {}).items():
        into.setdefault("samples", {}).setdefault(panel, {}).update(series)
    into.update(more)


def run(quick: bool) -> dict[str, Any]:
    """The bench part's entry point: QUICK or FULL counts, the same keys either way."""
    return measure(QUICK if quick else FULL)


def measure(counts: Counts) -> dict[str, Any]:
    """Every handshake figure, baseline and minting time, with the samples for the plot."""
    with tempfile.TemporaryDirectory(prefix="sharness-bench-") as tmp:
        workdir = Path(tmp)
        files = session_files(workdir)
        figures: dict[str, Any] = {
            "target_handshake_fresh_p50_ms": TARGET_FRESH_P50_MS,
            "target_request_warm_p50_ms": TARGET_WARM_P50_MS,
        }
        _merge_samples(figures, _project.measure(files, workdir, counts))
        _merge_samples(figures, _baselines(files, workdir, counts))
        figures.update(_mint.measure(counts.mint_repeats))
    figures["baseline_openssl_note"] = (
        "openssl s_time gives no distribution: its figure is wall time / connections, a mean, "
        "with one HTTP/1.0 GET per connection (s_server -WWW) as the accept round trip"
    )
    return figures
