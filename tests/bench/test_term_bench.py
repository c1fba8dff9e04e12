"""The terminal bench part with tiny inputs: every figure is there and positive. No timings judged."""

from __future__ import annotations

import pytest

from bench import term_bench


@pytest.mark.slow
def test_the_term_part_gives_every_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_bench, "WORKLOADS", {"ascii": b"text\n", "c1_encoded": "\u0085".encode(),
                                                  "coloured": b"\x1b[31mx\x1b[m\n"})
    figures = term_bench.run(quick=True)
    assert {"term_filter_mib_s_ascii", "term_relay_mib_s_c1_encoded", "term_status_per_s_idle",
            "term_status_per_s_worst_output"} <= set(figures)
    assert all(value > 0 for value in figures.values()), figures
