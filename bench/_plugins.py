"""The list of bench parts. Each is a module ``bench/<name>.py`` with ``run(quick: bool) -> dict``.

To add a part, write the module and add its name to PLUGINS. A listed part whose file is absent is
skipped and named in the run's notes; a part that is present and fails fails the bench (no swallowing).
A part may also define ``RATIOS``: ``((figure_key, baseline_key), ...)`` for the printed table, and
return ``{"samples": {panel: {series: [ms, ...]}}}`` to be plotted (the samples stay out of the JSON).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLUGINS: tuple[str, ...] = ("handshake", "fs_bench", "net_bench", "inject_bench", "session_bench", "term_bench",
                            "keys_bench", "fingerprint_bench", "model_bench", "shell_bench", "fs_mount_bench",
                            "launchd_bench", "overlay_bench")
SAMPLES_KEY = "samples"
_HERE = Path(__file__).resolve().parent


@dataclass
class Collected:
    """What every part gave: figures (flat), samples per panel, ratio pairs, and notes."""

    figures: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    ratios: list[tuple[str, str]] = field(default_factory=list)
    parts: dict[str, Any] = field(default_factory=dict)
    keys_by_part: dict[str, list[str]] = field(default_factory=dict)


def merge(collected: Collected, name: str, result: dict[str, Any], ratios: Iterable[tuple[str, str]]) -> None:
    """Fold one part's result into ``collected``; a key two parts both claim is an error."""
    result = dict(result)
    for panel, series in result.pop(SAMPLES_KEY, {}).items():
        collected.samples.setdefault(panel, {}).update(series)
    clash = sorted(set(result) & set(collected.figures))
    if clash:
        raise ValueError(f"bench part {name!r} returns keys another part already gave: {clash}")
    collected.figures.update(result)
    collected.ratios.extend(ratios)
    collected.keys_by_part[name] = list(result)


def run_all(quick: bool, names: Iterable[str] | None = None, directory: Path = _HERE,
            package: str = "bench") -> Collected:
    """Run every listed part whose file exists in ``directory`` (the ``package``), in order; time each."""
    collected = Collected()
    for name in PLUGINS if names is None else names:
        if not (directory / f"{name}.py").is_file():
            collected.parts[name] = "absent"
            continue
        module = importlib.import_module(f"{package}.{name}")
        start = time.perf_counter()
        result = module.run(quick)
        collected.parts[name] = {"seconds": round(time.perf_counter() - start, 2)}
        merge(collected, name, result, getattr(module, "RATIOS", ()))
    return collected
