"""bench._report: the table shows ratios against baselines; JSON and PNG are written whole."""

from __future__ import annotations

import json
from pathlib import Path

from bench._report import plot, table, write_json


def test_table_puts_each_baseline_and_ratio_beside_the_figure() -> None:
    figures = {"fresh_ms": 3.0, "base_ms": 2.0, "target_ms": 1.5, "fresh_n": 10, "note": "hello"}
    text = table(figures, [("fresh_ms", "base_ms"), ("fresh_ms", "target_ms")])
    lines = text.splitlines()
    fresh = next(i for i, line in enumerate(lines) if line.startswith("fresh_ms"))
    assert "base_ms" in lines[fresh] and "1.50x" in lines[fresh]
    assert "target_ms" in lines[fresh + 1] and "2.00x" in lines[fresh + 1]
    assert not any(line.startswith("fresh_n") for line in lines)
    assert "note: hello" in lines


def test_a_missing_baseline_reads_n_a() -> None:
    text = table({"fresh_ms": None, "base_ms": 2.0}, [("fresh_ms", "base_ms")])
    assert "n/a" in text.splitlines()[2]


def test_write_json_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "latest.json"
    write_json(path, {"a_ms": 1.5, "machine": {"cpu_count": 2}})
    assert json.loads(path.read_text()) == {"a_ms": 1.5, "machine": {"cpu_count": 2}}
    assert list(tmp_path.iterdir()) == [path]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    path = tmp_path / "latest.png"
    plot(path, {"fresh": {"a": [1.0, 2.0, 3.0]}, "warm": {"b": [0.1, 0.2]}})
    assert path.read_bytes().startswith(b"\x89PNG")


def test_plot_without_samples_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "latest.png"
    plot(path, {})
    assert not path.exists()


def test_each_part_gets_a_heading_before_its_first_printed_figure() -> None:
    figures = {"a_n": 3, "a_ms": 1.0, "b_note": "x", "b_ms": 2.0}
    lines = table(figures, [], {"alpha": ["a_n", "a_ms"], "beta": ["b_note", "b_ms"]}).splitlines()
    assert lines[2] == "[alpha]" and lines[3].startswith("a_ms")
    assert lines[4] == "[beta]" and lines[5].startswith("b_ms")
