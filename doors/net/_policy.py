"""The per-role allowlist from the manifest row `doors.net.allow`. Pure, no I/O.

A row is `host:port` (TLS required inside a CONNECT tunnel), `*.suffix:port` (any subdomain of
suffix, never suffix itself), an IP literal `192.0.2.7:443` / `[2001:db8::7]:443` (only then may a
request name that address), or any of these prefixed `tcp://` (a raw TCP tunnel: no TLS check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from doors.net._host import Host, HostError, parse_authority

ALLOW_ROW = "doors.net.allow"
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

    @property
    def row(self) -> str:
        """Where this rule lives in the manifest."""
        return f"{ALLOW_ROW}.{self.role}[{self.index}]"

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


@dataclass(frozen=True)
class Allowlist:
    """Allowlist rules per role; a role absent from the manifest is allowed nothing."""

    rules: Mapping[str, tuple[AllowRule, ...]]

    @classmethod
    def from_rows(cls, rows: Mapping[str, Sequence[str]]) -> Allowlist:
        """Build from `{"app": ["pypi.org:443", ...], ...}`."""
        rules = {
            role: tuple(parse_rule(role, i, text) for i, text in enumerate(entries))
            for role, entries in rows.items()
        }
        return cls(rules)

    def match(self, role: str, host: Host, port: int) -> AllowRule | None:
        """The first rule of `role` that allows `host:port`, or None."""
        return next((rule for rule in self.rules.get(role, ()) if rule.matches(host, port)), None)
