"""Pure statistics over latency samples (milliseconds): percentiles, summaries, ratios."""

from __future__ import annotations

import math
from collections.abc import Sequence

PERCENTILES = (50, 90, 99)


def percentile(samples: Sequence[float], pct: float) -> float:
    """The ``pct``-th percentile by linear interpolation between closest ranks (numpy's default)."""
    if not samples:
        raise ValueError("bench: percentile of no samples")
    if not 0 <= pct <= 100:
        raise ValueError(f"bench: percentile {pct} is outside 0..100")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * pct / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(prefix: str, samples: Sequence[float]) -> dict[str, float | int]:
    """``{prefix}_p50_ms``, ``_p90_ms``, ``_p99_ms``, ``_mean_ms`` and ``_n`` for one series."""
    summary: dict[str, float | int] = {
        f"{prefix}_p{pct}_ms": round(percentile(samples, pct), 4) for pct in PERCENTILES
    }
    summary[f"{prefix}_mean_ms"] = round(sum(samples) / len(samples), 4)
    summary[f"{prefix}_n"] = len(samples)
    return summary


def ratio(figure: float | None, baseline: float | None) -> float | None:
    """``figure / baseline``, or None when either is missing or the baseline is zero."""
    if figure is None or baseline is None or baseline == 0:
        return None
    return round(figure / baseline, 3)


def rate_per_s(count: int, elapsed_s: float) -> float:
    """Events per second, rounded to one decimal."""
    if elapsed_s <= 0:
        raise ValueError("bench: a rate needs a positive elapsed time")
    return round(count / elapsed_s, 1)
