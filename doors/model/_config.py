"""The model door's rows, read once from its contract into one frozen record. Pure: no I/O.

The manifest's `doors.model` rows arrive as they were written (launcher/policy/contracts.py adds only where the
keys door listens); each is checked here again, so a contract that was not made by the launcher fails loudly
at start rather than half-holding a row.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from doors._refusal import Refusal
from doors.model._prices import Price, price_for, price_table
from doors.model._shape import MAX_BODY_BYTES
from pki.vocabulary import internal_range_problem

TWIN = "twin"

DEFAULT_MAX_BODY_BYTES = MAX_BODY_BYTES
DEFAULT_MAX_BODY_BYTES_IN_FLIGHT = 2 * MAX_BODY_BYTES  # of a 256 MiB door: parsed JSON takes a multiple
DEFAULT_MAX_CALLS = 64  # calls in flight at once; more are answered 529 with retry-after
# Below this many output tokens a call is refused rather than forwarded (a reply that short is useless and
# would only spend the rest of the budget on input).
DEFAULT_FLOOR_TOKENS = 16
KEYS_SOCKET_ROW = "keys_socket"
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Upstream:
    """Where calls go: the twin, or `https://host:port`."""

    twin: bool
    host: str = ""
    port: int = 443

    @property
    def name(self) -> str:
        return TWIN if self.twin else f"https://{self.host}" + ("" if self.port == 443 else f":{self.port}")


@dataclass(frozen=True)
class ModelConfig:
    """Every row the model door holds."""

    upstream: Upstream
    secret: str | None
    budget_microusd: int
    models: frozenset[str] | None  # None: every priced model
    prices: Mapping[str, Price]
    ca_bundle: str | None = None
    internal_ranges: tuple[IPNetwork, ...] = ()
    keys_socket: str | None = None
    twin_script: Mapping[str, Any] | None = None  # the twin's scripted answers (doors.model.twin_script)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_calls: int = DEFAULT_MAX_CALLS
    max_body_bytes_in_flight: int = DEFAULT_MAX_BODY_BYTES_IN_FLIGHT
    floor_tokens: int = DEFAULT_FLOOR_TOKENS


def parse_upstream(value: object) -> Upstream:
    """`"twin"` or `https://host[:port]` (lowercase, no path); ValueError otherwise."""
    if value == TWIN:
        return Upstream(twin=True)
    text = str(value)
    if not text.startswith("https://") or "/" in text[len("https://"):]:
        raise ValueError(f"doors.model.upstream must be \"twin\" or https://host[:port], not {text!r}")
    host, colon, port = text[len("https://"):].partition(":")
    if not host or (colon and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(f"doors.model.upstream {text!r} has no usable host or port")
    return Upstream(twin=False, host=host, port=int(port) if colon else 443)


def _positive(rows: Mapping[str, Any], name: str, default: int) -> int:
    value = rows.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"doors.model.{name} must be a positive integer, not {value!r}")
    return value


def _ranges(rows: Mapping[str, Any]) -> tuple[IPNetwork, ...]:
    # Never an upstream, whatever `internal_ranges` says: the door's host, and where the session's listeners live.
    for entry in rows.get("internal_ranges", ()):
        problem = internal_range_problem(str(entry))
        if problem:
            raise ValueError(f"doors.model.internal_ranges: {problem}; no upstream is on loopback, link-local or "
                             "unspecified addresses")
    return tuple(ipaddress.ip_network(str(entry)) for entry in rows.get("internal_ranges", ()))


def config_from_rows(rows: Mapping[str, Any]) -> ModelConfig:
    """The door's config from its contract rows (the manifest's doors.model, plus keys_socket)."""
    upstream = parse_upstream(rows.get("upstream", ""))
    secret = rows.get("secret")
    if not upstream.twin and not isinstance(secret, str):
        raise ValueError("doors.model.secret is required for an https upstream")
    budget = rows.get("budget_microusd")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise ValueError(f"doors.model.budget_microusd must be an integer >= 0, not {budget!r}")
    prices = price_table(rows.get("prices"))
    models = frozenset(str(name) for name in rows["models"]) if "models" in rows else None
    unpriced = sorted(name for name in models or () if isinstance(price_for(prices, name), Refusal))
    if unpriced:
        raise ValueError(f"doors.model.models lists {unpriced} with no price: add them to doors.model.prices")
    return ModelConfig(
        upstream=upstream, secret=secret if isinstance(secret, str) else None, budget_microusd=budget,
        models=models, prices=prices, ca_bundle=rows.get("ca_bundle"), internal_ranges=_ranges(rows),
        keys_socket=rows.get(KEYS_SOCKET_ROW), twin_script=rows.get("twin_script"),
        max_body_bytes=_positive(rows, "max_body_bytes", DEFAULT_MAX_BODY_BYTES),
        max_calls=_positive(rows, "max_calls", DEFAULT_MAX_CALLS),
        max_body_bytes_in_flight=_positive(rows, "max_body_bytes_in_flight", DEFAULT_MAX_BODY_BYTES_IN_FLIGHT),
        floor_tokens=_positive(rows, "floor_tokens", DEFAULT_FLOOR_TOKENS),
    )
