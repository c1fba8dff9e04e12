"""Prices: exact cost of every token kind, rounded up once, the long-prompt band, overrides, unpriced models."""

from __future__ import annotations

from fractions import Fraction

import pytest

from doors._refusal import Refusal
from doors.model._prices import (
    RATE_FIELDS,
    SHIPPED_PRICES,
    LongPrompt,
    Price,
    PriceError,
    cost_microusd,
    price_for,
    price_table,
    undated,
    usd_per_mtok,
)
from doors.model._usage import Usage

SONNET = SHIPPED_PRICES["claude-sonnet-4-5"]
HAIKU_55 = SHIPPED_PRICES["claude-haiku-5-5"]


@pytest.mark.parametrize(("usage", "microusd"), [
    (Usage(), 0),
    # µUSD per token = USD per MTok: sonnet 4.5 is 3, 3.75, 6, 0.3, 15
    (Usage(input_tokens=1), 3),
    (Usage(cache_creation_5m=4), 15),
    (Usage(cache_creation_1h=1), 6),
    (Usage(cache_read=10), 3),
    (Usage(output_tokens=1), 15),
    # LiteLLM's check (clients-and-tools.md B.2): 1000 in + 2000 5m writes + 5000 reads + 100 out = $0.0135
    (Usage(input_tokens=1000, cache_creation_5m=2000, cache_read=5000, output_tokens=100), 13_500),
    (Usage(input_tokens=1000, cache_creation_5m=2000, cache_creation_1h=3000, cache_read=5000, output_tokens=100),
     31_500),
    (Usage(output_tokens=1, web_search_requests=3), 15 + 30_000),  # $10 per 1000 searches
])
def test_cost_of_each_kind(usage: Usage, microusd: int) -> None:
    assert cost_microusd(usage, SONNET) == microusd


@pytest.mark.parametrize(("usage", "microusd"), [
    (Usage(cache_read=1), 1),  # 0.3 µUSD rounds up to 1, never down to 0
    (Usage(cache_read=3), 1),  # 0.9
    (Usage(cache_read=4), 2),  # 1.2
    (Usage(cache_read=10), 3),  # exactly 3: no rounding
    (Usage(cache_read=1, cache_creation_5m=1), 5),  # 0.3 + 3.75 = 4.05: rounded once, on the sum
])
def test_rounding_is_up_and_once(usage: Usage, microusd: int) -> None:
    assert cost_microusd(usage, SONNET) == microusd


def test_sub_micro_rates_are_exact() -> None:
    # Haiku 5.5 cache reads are $0.01/MTok: 100 reads = 1 µUSD exactly, 101 reads = 1.01 → 2
    assert cost_microusd(Usage(cache_read=100), HAIKU_55) == 1
    assert cost_microusd(Usage(cache_read=101), HAIKU_55) == 2
    assert HAIKU_55.cache_write_5m == Fraction(1, 8)


def test_long_prompt_band_applies_to_every_token_of_the_call() -> None:
    short = Usage(input_tokens=100_000, output_tokens=1000)
    long = Usage(input_tokens=100_001, output_tokens=1000)
    assert cost_microusd(short, HAIKU_55) == 10_000 + 500
    assert cost_microusd(long, HAIKU_55) == 50_001 + 2500  # $0.50 and $2.50 per MTok


def test_the_band_counts_cache_writes_and_reads_as_prompt() -> None:
    usage = Usage(input_tokens=1, cache_creation_5m=50_000, cache_creation_1h=25_000, cache_read=25_000)
    assert usage.prompt_tokens == 100_001
    assert HAIKU_55.band(usage.prompt_tokens) is HAIKU_55.long_prompt.price  # type: ignore[union-attr]
    assert SONNET.band(200_000) is SONNET
    assert SONNET.band(200_001).input == 6


def test_dearest_input_is_the_1h_write() -> None:
    for price in SHIPPED_PRICES.values():
        assert price.dearest_input(10) == price.cache_write_1h
    assert SONNET.dearest_input(300_000) == 12


def test_shipped_cache_rates_follow_the_published_multipliers() -> None:
    # 5m writes 1.25x input, 1h writes 2x input, for every shipped model and band; reads at most 0.1x.
    bands = [*SHIPPED_PRICES.values()] + [p.long_prompt.price for p in SHIPPED_PRICES.values() if p.long_prompt]
    for price in bands:
        assert price.cache_write_5m == price.input * Fraction(5, 4)
        assert price.cache_write_1h == price.input * 2
        assert price.cache_read <= price.input / 10


def test_usd_per_mtok_takes_no_float() -> None:
    assert usd_per_mtok("0.1", "0.125", "0.2", "0.01", "0.5").input == Fraction(1, 10)


def test_overrides_are_nano_usd_per_token() -> None:
    table = price_table({"my-model": {"input": 3000, "cache_write_5m": 3750, "cache_write_1h": 6000,
                                      "cache_read": 300, "output": 15000}})
    assert table["my-model"] == Price(Fraction(3), Fraction(15, 4), Fraction(6), Fraction(3, 10), Fraction(15))
    assert table["claude-haiku-4-5"] == SHIPPED_PRICES["claude-haiku-4-5"]


def test_an_override_replaces_a_shipped_price_wholly() -> None:
    rates = dict.fromkeys(RATE_FIELDS, 1)
    price = price_table({"claude-haiku-5-5": rates})["claude-haiku-5-5"]
    assert price.long_prompt is None and price.output == Fraction(1, 1000)


def test_no_overrides_is_the_shipped_table() -> None:
    assert dict(price_table(None)) == dict(SHIPPED_PRICES)
    assert dict(price_table({})) == dict(SHIPPED_PRICES)


@pytest.mark.parametrize(("rates", "message"), [
    ({"input": 1}, "missing"),
    ({**dict.fromkeys(RATE_FIELDS, 1), "cache_write": 1}, "unknown"),
    ({**dict.fromkeys(RATE_FIELDS, 1), "output": 1.5}, r"doors\.model\.prices\.m\.output: 1\.5 is not a whole"),
    ({**dict.fromkeys(RATE_FIELDS, 1), "input": True}, "input: True"),
    ({**dict.fromkeys(RATE_FIELDS, 1), "input": "3"}, "input: '3'"),
    ({**dict.fromkeys(RATE_FIELDS, 1), "cache_read": -1}, "negative"),
])
def test_bad_overrides_are_refused_naming_the_row(rates: dict[str, object], message: str) -> None:
    with pytest.raises(PriceError, match=message):
        price_table({"m": rates})


@pytest.mark.parametrize(("model", "alias"), [
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
    ("claude-sonnet-4-20250514", "claude-sonnet-4"),
    ("claude-opus-5-5", "claude-opus-5-5"),
    ("claude-x-2025", "claude-x-2025"),
    ("claude-x-202501011", "claude-x-202501011"),
])
def test_undated(model: str, alias: str) -> None:
    assert undated(model) == alias


def test_a_snapshot_is_priced_as_its_alias() -> None:
    assert price_for(SHIPPED_PRICES, "claude-haiku-4-5-20251001") == SHIPPED_PRICES["claude-haiku-4-5"]


def test_an_exact_entry_wins_over_the_alias() -> None:
    table = price_table({"claude-haiku-4-5-20251001": dict.fromkeys(RATE_FIELDS, 7)})
    assert price_for(table, "claude-haiku-4-5-20251001").input == Fraction(7, 1000)  # type: ignore[union-attr]


def test_an_unpriced_model_is_refused_naming_the_row() -> None:
    refusal = price_for(SHIPPED_PRICES, "gpt-9")
    assert isinstance(refusal, Refusal)
    assert (refusal.status, refusal.row, refusal.who) == (404, "doors.model.prices", "model")
    assert "gpt-9" in refusal.detail and "doors.model.prices" in refusal.hint


def test_long_prompt_record() -> None:
    band = LongPrompt(10, usd_per_mtok("2", "2.5", "4", "0.2", "10"))
    price = usd_per_mtok("1", "1.25", "2", "0.1", "5", band)
    assert cost_microusd(Usage(input_tokens=10), price) == 10
    assert cost_microusd(Usage(input_tokens=11), price) == 22
