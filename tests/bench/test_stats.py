"""bench._stats: percentiles, summaries and ratios on known samples."""

from __future__ import annotations

import pytest

from bench._stats import percentile, rate_per_s, ratio, summarize


def test_percentile_interpolates_between_ranks() -> None:
    samples = [4.0, 1.0, 3.0, 2.0]
    assert percentile(samples, 0) == 1.0
    assert percentile(samples, 100) == 4.0
    assert percentile(samples, 50) == pytest.approx(2.5)
    assert percentile(samples, 90) == pytest.approx(3.7)


def test_percentile_of_one_sample_is_that_sample() -> None:
    assert percentile([7.5], 99) == 7.5


@pytest.mark.parametrize("bad", [-1, 100.5])
def test_percentile_refuses_out_of_range(bad: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        percentile([1.0], bad)


def test_percentile_refuses_no_samples() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)


def test_summarize_names_every_key_with_the_prefix() -> None:
    summary = summarize("x", [float(v) for v in range(1, 101)])
    assert set(summary) == {"x_p50_ms", "x_p90_ms", "x_p99_ms", "x_mean_ms", "x_n"}
    assert summary["x_n"] == 100
    assert summary["x_p50_ms"] == pytest.approx(50.5)
    assert summary["x_mean_ms"] == pytest.approx(50.5)


def test_ratio_is_none_when_a_side_is_missing() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(3.0, None) is None
    assert ratio(3.0, 0.0) is None


def test_rate_needs_time() -> None:
    assert rate_per_s(30, 2.0) == 15.0
    with pytest.raises(ValueError):
        rate_per_s(1, 0.0)
