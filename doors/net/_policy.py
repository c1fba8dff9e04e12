"""The per-role allowlist from the manifest row `doors.net.allow`. Pure, no I/O.

A row is `host:port` (TLS required inside a CONNECT tunnel), `*.suffix:port` (any subdomain of
suffix, never suffix itself), an IP literal `192.0.2.7:443` / `[2001:db8::7]:443` (only then may a
request name that address), or any of these prefixed `tcp://` (a raw TCP tunnel: no TLS check).

A named entry may also have internal ranges (`doors.net.internal.<role>`, `{"host:port": ["10.20.0.0/16"]}`):
then its name must resolve into those ranges only (never loopback, link-local or the door's own: `_addr`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from doors.net._addr import IPNetwork
from doors.net._host import Host, HostError, parse_authority
from pki.vocabulary import internal_range_problem

ALLOW_ROW = "doors.net.allow"
INTERNAL_ROW = "doors.net.internal"
RAW_PREFIX = "tcp://"


class AllowlistError(ValueError):
    """A manifest row the door cannot read; names the row."""


@dataclass(frozen=True)
class AllowRule:
    """One allowlist entry, normalised."""

    role: str
    index: int
    text: str
    host: Host
    port: int
    wildcard: bool = False
    raw_tcp: bool = False
    internal: tuple[IPNetwork, ...] = ()  # the only ranges its name may resolve into; () for public only

    @property
    def row(self) -> str:
        """Where this rule lives in the manifest."""
        return f"{ALLOW_ROW}.{self.role}[{self.index}]"

    @property
    def internal_row(self) -> str:
        """Where this rule's internal ranges live in the manifest."""
        return f"{INTERNAL_ROW}.{self.role}[{self.text!r}]"

    def matches(self, host: Host, port: int) -> bool:
        """True when `host:port` is what this rule allows."""
        if port != self.port:
            return False
        if self.host.ip is not None or host.ip is not None:
            return self.host.ip is not None and self.host.ip == host.ip
        if self.wildcard:
            return host.name.endswith("." + self.host.name)
        return host.name == self.host.name


def parse_rule(role: str, index: int, text: str) -> AllowRule:
    """Normalise one manifest entry; raise AllowlistError naming it."""
    where = f"{ALLOW_ROW}.{role}[{index}] = {text!r}"
    body = text[len(RAW_PREFIX) :] if text.startswith(RAW_PREFIX) else text
    wildcard = body.startswith("*.")
    try:
        host, port = parse_authority(body[2:] if wildcard else body)
    except HostError as exc:
        raise AllowlistError(f"{where}: {exc.detail}") from exc
    if wildcard and host.ip is not None:
        raise AllowlistError(f"{where}: a wildcard cannot cover an IP literal")
    if wildcard and "." not in host.name:
        raise AllowlistError(f"{where}: a wildcard needs a suffix of two labels or more (*.example.org)")
    return AllowRule(role, index, text, host, port, wildcard, text.startswith(RAW_PREFIX))


def _ranges(where: str, texts: Sequence[str]) -> tuple[IPNetwork, ...]:
    if not texts:
        raise AllowlistError(f"{where}: names no range")
    for text in texts:
        problem = internal_range_problem(str(text))
        if problem:
            raise AllowlistError(f"{where}: {problem}")
    return tuple(dict.fromkeys(ipaddress.ip_network(str(text)) for text in texts))


def _with_internal(role: str, rules: tuple[AllowRule, ...],
                   entries: Mapping[str, Sequence[str]]) -> tuple[AllowRule, ...]:
    """`rules` with each internal entry's ranges on the allow rule it names (a named host, not a wildcard)."""
    by_text = {rule.text: rule for rule in rules}
    for text, ranges in entries.items():
        where = f"{INTERNAL_ROW}.{role}[{text!r}]"
        rule = by_text.get(text)
        if rule is None:
            raise AllowlistError(f"{where}: {text!r} is not in {ALLOW_ROW}.{role}")
        if rule.wildcard or rule.host.ip is not None:
            raise AllowlistError(f"{where}: an internal row names one host, not a wildcard or an IP literal")
        by_text[text] = replace(rule, internal=_ranges(where, ranges))
    return tuple(by_text[rule.text] for rule in rules)


@dataclass(frozen=True)
class Allowlist:
    """Allowlist rules per role; a role absent from the manifest is allowed nothing."""

    rules: Mapping[str, tuple[AllowRule, ...]]

    @classmethod
    def from_rows(cls, rows: Mapping[str, Sequence[str]],
                  internal: Mapping[str, Mapping[str, Sequence[str]]] | None = None) -> Allowlist:
        """Build from `{"app": ["pypi.org:443", ...], ...}` and the internal rows `{"app": {"pypi.org:443":
        ["10.20.0.0/16"]}}`, each of which names an allow entry of its role."""
        rules = {
            role: tuple(parse_rule(role, i, text) for i, text in enumerate(entries))
            for role, entries in rows.items()
        }
        for role, entries in (internal or {}).items():
            rules[role] = _with_internal(role, rules.get(role, ()), entries)
        return cls(rules)

    def match(self, role: str, host: Host, port: int) -> AllowRule | None:
        """The first rule of `role` that allows `host:port`, or None."""
        return next((rule for rule in self.rules.get(role, ()) if rule.matches(host, port)), None)
