"""The fingerprint bench part with a small input: every figure is there and positive. No timings judged."""

from __future__ import annotations

import pytest

from bench import fingerprint_bench


def test_the_fingerprint_part_gives_every_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint_bench, "QUICK_MIB", 1)
    figures = fingerprint_bench.run(quick=True)
    for workload in ("random", "text"):
        assert {f"fingerprint_scan_mib_s_1_secret_{workload}", f"fingerprint_scan_mib_s_5_secrets_{workload}",
                f"regex_scan_mib_s_shapes_{workload}", f"regex_scan_mib_s_fs_markers_{workload}"} <= set(figures)
    assert all(value > 0 for value in figures.values()), figures
    assert set(fingerprint_bench.RATIOS[0]) <= set(figures)
