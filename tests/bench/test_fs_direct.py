"""The fs bench's socket baselines move every byte, and report CPU of both sides."""

from __future__ import annotations

import os

from bench._fs_direct import Clock, process_cpu_s, socket_read, socket_write


def test_socket_write_lands_every_byte_and_socket_read_takes_them_back(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "large")
    payload = os.urandom(3 * 256 * 1024 + 11)
    written = socket_write(path, payload)
    with open(path, "rb") as source:
        assert source.read() == payload
    read = socket_read(path, len(payload))
    assert written.wall_s > 0 and read.wall_s > 0
    assert written.other_cpu_s >= 0 and read.cpu_s > 0


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
