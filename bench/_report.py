"""The bench's outputs: the JSON document, the printed table with ratios, the PNG of distributions."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench._stats import ratio

_UNPRINTED = ("_n", "_mean_ms")  # in the JSON, left out of the table


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` atomically (a reader never sees half a file)."""
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(partial, path)


def _cell(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _baselines_by_figure(ratios: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for figure, baseline in ratios:
        grouped.setdefault(figure, []).append(baseline)
    return grouped


def table(figures: Mapping[str, Any], ratios: Iterable[tuple[str, str]],
          sections: Mapping[str, list[str]] | None = None) -> str:
    """One line per figure (counts left out), then one per baseline it is compared with, with the ratio;
    a heading before each part's figures when ``sections`` names them."""
    baselines = _baselines_by_figure(ratios)
    numeric = [k for k, v in figures.items() if not isinstance(v, str) and not k.endswith(_UNPRINTED)]
    width = max((len(k) for k in numeric), default=10)
    base_width = max((len(b) for group in baselines.values() for b in group), default=8)
    header = f"{'figure':<{width}}  {'value':>9}  {'compared with':<{base_width}}  {'value':>9}  {'ratio':>7}"
    lines = [header, "-" * len(header)]
    printed = set(numeric)
    firsts = {name: next((k for k in keys if k in printed), None) for name, keys in (sections or {}).items()}
    heading_before = {first: name for name, first in firsts.items() if first is not None}
    for key in numeric:
        if key in heading_before:
            lines.append(f"[{heading_before[key]}]")
        value = figures[key]
        group = baselines.get(key) or [""]
        for index, base_key in enumerate(group):
            left = f"{key:<{width}}  {_cell(value):>9}" if index == 0 else " " * (width + 11)
            if not base_key:
                lines.append(left)
                continue
            times = ratio(value, figures.get(base_key))
            shown = "n/a" if times is None else f"{times:.2f}x"
            lines.append(f"{left}  {base_key:<{base_width}}  {_cell(figures.get(base_key)):>9}  {shown:>7}")
    notes = [f"{k}: {v}" for k, v in figures.items() if isinstance(v, str)]
    return "\n".join(lines + (["", *notes] if notes else []))


PLOT_COLUMNS = 4  # panels per row: a page, not a 13-panel strip


def plot(path: Path, samples: Mapping[str, Mapping[str, list[float]]]) -> None:
    """One panel per kind of latency: the empirical CDF of every series, log-scaled milliseconds."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot, ticker

    panels = [(title, samples[title]) for title in sorted(samples) if samples[title]]
    if not panels:
        return
    columns = min(PLOT_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    figure, axes = pyplot.subplots(rows, columns, figsize=(6.5 * columns, 4.5 * rows), squeeze=False)
    cells = [axis for row in axes for axis in row]
    for axis in cells[len(panels):]:
        axis.set_visible(False)
    for axis, (title, series) in zip(cells, panels, strict=False):
        for name, values in series.items():
            ordered = sorted(values)
            heights = [(i + 1) / len(ordered) for i in range(len(ordered))]
            axis.step(ordered, heights, where="post", label=f"{name} (n={len(ordered)})")
        axis.set_xscale("log")
        axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_xlabel("milliseconds (log)")
        axis.set_ylabel("fraction of samples at or below")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize="small", loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
