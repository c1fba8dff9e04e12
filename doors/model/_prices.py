"""What a call costs: a price per model and token kind, exact, rounded up once. Pure: no I/O, no float.

A price is USD per million tokens, which is exactly micro-USD (µUSD) per token, kept as a `Fraction` so
$0.125/MTok is exact. A call's cost is summed exactly and rounded up to a whole µUSD once, so the ledger
never charges less than the provider bills. Manifest overrides are integers (the manifest has no floats):
nano-USD per token, which is also milli-USD per million tokens ($3/MTok is 3000).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from types import MappingProxyType

from doors._refusal import Refusal
from doors.model._errors import ROW_PRICES, WHO, shown
from doors.model._usage import Usage

NANO_PER_MICRO = 1000
# The web search server tool: $10 per 1000 searches, on top of the tokens (the pricing page's "Web search").
WEB_SEARCH_MICROUSD = 10_000
_SNAPSHOT_DATE = re.compile(r"-\d{8}$")


@dataclass(frozen=True)
class LongPrompt:
    """A second band: a call whose prompt (input + cache writes + cache reads) is over `over_tokens` pays
    `price` on every token, output included (Haiku 5.5 over 100K; Sonnet 4.x over 200K)."""

    over_tokens: int
    price: Price


@dataclass(frozen=True)
class Price:
    """µUSD per token (= USD per million tokens) for each kind of token a call is billed for."""

    input: Fraction
    cache_write_5m: Fraction
    cache_write_1h: Fraction
    cache_read: Fraction
    output: Fraction
    long_prompt: LongPrompt | None = None

    def band(self, prompt_tokens: int) -> Price:
        """The price that applies to a call whose prompt has `prompt_tokens` tokens."""
        if self.long_prompt is not None and prompt_tokens > self.long_prompt.over_tokens:
            return self.long_prompt.price
        return self

    def dearest_input(self, prompt_tokens: int) -> Fraction:
        """The most a prompt token can cost in a call of that size: what an input reservation uses."""
        band = self.band(prompt_tokens)
        return max(band.input, band.cache_write_5m, band.cache_write_1h, band.cache_read)


RATE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Price) if f.name != "long_prompt")


def usd_per_mtok(input: str, cache_write_5m: str, cache_write_1h: str, cache_read: str, output: str,
                 long_prompt: LongPrompt | None = None) -> Price:
    """A Price from the provider's published figures, as decimal strings (so nothing passes through a float)."""
    return Price(Fraction(input), Fraction(cache_write_5m), Fraction(cache_write_1h), Fraction(cache_read),
                 Fraction(output), long_prompt)


# platform.claude.com/docs/en/about-claude/pricing ("Model pricing", "Long context pricing"; the models' own
# pages for Opus 5.5, Sonnet 5.5, Haiku 5.5), read 2026-12-01; Sonnet 5.5 cache reads at $0.10 since
# 2026-10-07. Columns: input, 5m cache write, 1h cache write, cache read, output, in USD per MTok.
# Retired models (Opus 4/4.1, Sonnet 3.x, Haiku 3.x) are left out: a manifest prices them if it needs them.
_OPUS_45 = usd_per_mtok("5", "6.25", "10", "0.50", "25")
_SONNET_4 = usd_per_mtok("3", "3.75", "6", "0.30", "15",
                         LongPrompt(200_000, usd_per_mtok("6", "7.50", "12", "0.60", "22.50")))
SHIPPED_PRICES: Mapping[str, Price] = MappingProxyType({
    "claude-fable-5-1": usd_per_mtok("10", "12.50", "20", "0.25", "50"),
    "claude-fable-5": usd_per_mtok("10", "12.50", "20", "1", "50"),
    "claude-opus-5-5": usd_per_mtok("4", "5", "8", "0.20", "20"),
    "claude-opus-5": _OPUS_45,
    "claude-opus-4-8": _OPUS_45,
    "claude-opus-4-7": _OPUS_45,
    "claude-opus-4-6": _OPUS_45,
    "claude-opus-4-5": _OPUS_45,
    "claude-sonnet-5-5": usd_per_mtok("2", "2.50", "4", "0.10", "10"),
    "claude-sonnet-5": usd_per_mtok("2", "2.50", "4", "0.20", "10"),
    "claude-sonnet-4-6": usd_per_mtok("3", "3.75", "6", "0.30", "15"),
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,  # what claude-sonnet-4-20250514 is without its date
    "claude-haiku-5-5": usd_per_mtok("0.10", "0.125", "0.20", "0.01", "0.50",
                                     LongPrompt(100_000, usd_per_mtok("0.50", "0.625", "1", "0.05", "2.50"))),
    "claude-haiku-4-5": usd_per_mtok("1", "1.25", "2", "0.10", "5"),
})


class PriceError(ValueError):
    """A manifest price override that cannot be a price; the message names the row."""


def price_table(overrides: Mapping[str, Mapping[str, object]] | None) -> Mapping[str, Price]:
    """The shipped prices with the manifest's overrides on top, each override a whole price in nano-USD/token.

    An override replaces the model's price entirely (its long-prompt band too): all five rates are given.
    """
    table = dict(SHIPPED_PRICES)
    for model, rates in (overrides or {}).items():
        table[model] = _override(model, rates)
    return MappingProxyType(table)


def _override(model: str, rates: Mapping[str, object]) -> Price:
    row = f"{ROW_PRICES}.{model}"
    missing = [name for name in RATE_FIELDS if name not in rates]
    unknown = sorted(set(rates) - set(RATE_FIELDS))
    if missing or unknown:
        raise PriceError(f"{row}: give exactly {', '.join(RATE_FIELDS)} (missing {missing}, unknown {unknown})")
    input, write_5m, write_1h, read, output = (_nano_rate(f"{row}.{name}", rates[name]) for name in RATE_FIELDS)
    return Price(input, write_5m, write_1h, read, output)


def _nano_rate(row: str, value: object) -> Fraction:
    # bool is an int to Python, and a float is how money goes wrong: neither is a price.
    if isinstance(value, bool) or not isinstance(value, int | Fraction):
        raise PriceError(f"{row}: {shown(value)} is not a whole number of nano-USD per token ($3/MTok is 3000)")
    if value < 0:
        raise PriceError(f"{row}: {value} is negative")
    return Fraction(value) / NANO_PER_MICRO


def undated(model: str) -> str:
    """The model's alias without a snapshot date (`claude-haiku-4-5-20251001` → `claude-haiku-4-5`)."""
    return _SNAPSHOT_DATE.sub("", model)


def price_for(table: Mapping[str, Price], model: str) -> Price | Refusal:
    """The model's price (its exact name, else its alias without the snapshot date), or a 404 naming the row."""
    price = table.get(model) or table.get(undated(model))
    if price is not None:
        return price
    return Refusal(404, ROW_PRICES, WHO, f"model {shown(model)} has no price, so the budget cannot hold it",
                   f"add {shown(model)} to {ROW_PRICES} (nano-USD per token for {', '.join(RATE_FIELDS)}), "
                   "or ask for a priced model")


def cost_microusd(usage: Usage, price: Price) -> int:
    """What `usage` costs at `price`, in whole µUSD, rounded up (never under what the provider bills), web
    searches included."""
    band = price.band(usage.prompt_tokens)
    exact = (usage.input_tokens * band.input
             + usage.cache_creation_5m * band.cache_write_5m
             + usage.cache_creation_1h * band.cache_write_1h
             + usage.cache_read * band.cache_read
             + usage.output_tokens * band.output)
    return math.ceil(exact) + usage.web_search_requests * WEB_SEARCH_MICROUSD
