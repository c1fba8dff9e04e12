"""The fs bench's socket baselines move every byte, and report CPU of both sides."""

from __future__ import annotations

import os
from pathlib import Path

from bench._certs import CertFiles
from bench._fs_direct import Clock, process_cpu_s, socket_read, socket_write, tls_read, tls_write
from pki.testing import SessionPKI


def test_socket_write_lands_every_byte_and_socket_read_takes_them_back(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "large")
    payload = os.urandom(3 * 256 * 1024 + 11)
    written = socket_write(path, payload)
    with open(path, "rb") as source:
        assert source.read() == payload
    read = socket_read(path, len(payload))
    assert written.wall_s > 0 and read.wall_s > 0
    assert written.other_cpu_s >= 0 and read.cpu_s > 0


def test_the_tls_floor_lands_every_byte_and_reads_them_back_inside_mutual_tls(tmp_path: Path) -> None:
    pki = SessionPKI.create()
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(pki.bundle_pem())
    server, client = (Path(pki.write_svid(role, tmp_path)) for role in ("fs", "app"))
    path = str(tmp_path / "large")
    payload = os.urandom(3 * 256 * 1024 + 11)
    written = tls_write(path, payload, CertFiles(server, server, bundle), CertFiles(client, client, bundle))
    assert Path(path).read_bytes() == payload
    read = tls_read(path, len(payload), CertFiles(server, server, bundle), CertFiles(client, client, bundle))
    assert written.wall_s > 0 and read.cpu_s > 0 and read.other_cpu_s >= 0


def test_the_clock_reads_another_process_cpu() -> None:
    with Clock(os.getpid()) as clock:
        sum(range(200_000))
    assert clock.timed.cpu_s > 0 and clock.timed.other_cpu_s >= 0
    assert process_cpu_s(os.getpid()) > 0


def test_the_scan_figures_are_written() -> None:
    from bench._fs_scan import scan_figures

    figures = scan_figures(1 << 20)
    assert set(figures) == {"fs_scan_cpu_ms_per_mb_markers", "fs_scan_cpu_ms_per_mb_kept8"}
    assert all(value >= 0 for value in figures.values())
