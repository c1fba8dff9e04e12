"""bench.session_bench: PSS from smaps_rollup, and one smoke run of real sessions (root) that leaves nothing behind."""

from __future__ import annotations

import glob
import tempfile

import pytest

from bench._session_doors import WAYS, pss_kb
from bench.session_bench import TARGETS, Counts, measure

ROLLUP = """55d0c0a00000-7ffd6a5f3000 ---p 00000000 00:00 0                          [rollup]
Rss:               45012 kB
Pss:               20311 kB
Pss_Dirty:         12000 kB
"""


def test_pss_is_read_from_the_pss_line_not_pss_dirty() -> None:
    assert pss_kb(ROLLUP) == 20311
    with pytest.raises(ValueError, match="no Pss"):
        pss_kb("Rss: 1 kB\n")


@pytest.mark.root
def test_one_tiny_run_gives_every_figure_and_leaves_nothing() -> None:
    scratch = [f"{tempfile.gettempdir()}/sharness-bench-{part}-*" for part in ("session", "doors")]
    before = {path for pattern in scratch for path in glob.glob(pattern)}
    figures = measure(Counts(end_to_end=1, ready=1, baseline=1, doors=1))
    headline = ("session_ready_ms", "session_end_to_end_ms", "session_pss_mb")
    for key in (*headline, *TARGETS, "session_python_pass_p50_ms", "session_bin_true_p50_ms",
                "session_launcher_imports_p50_ms", "session_ready_full_after_imports_p50_ms",
                "session_ready_min_after_imports_p50_ms", "session_end_to_end_min_p50_ms",
                "session_pss_mb_launcher", "session_pss_mb_app", "session_zygote_pss_mb"):
        assert isinstance(figures[key], (int, float)), key
    for role in ("fs", "net", "keys", "shell"):
        assert figures[f"session_door_ready_after_create_{role}_p50_ms"] > 0
        assert figures[f"session_pss_mb_{role}"] > 0
    for way in WAYS:
        assert figures[f"session_door_{way}_hello_p50_ms"] >= figures[f"session_door_{way}_ready_p50_ms"] > 0
    assert figures["session_leftovers"] == "none"
    assert set(figures["samples"]) == {"session start to end (ms)", "door start to ready (ms)"}
    # Only what this run made counts: another bench on the machine may remove its own scratch meanwhile.
    assert {path for pattern in scratch for path in glob.glob(pattern)} - before == set()
