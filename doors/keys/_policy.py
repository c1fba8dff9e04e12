"""Whether the keys door releases a secret: role, host, request id, freshness and limits. Pure: no I/O.

The caller's role comes from its SVID (the transport read it), never from the request. Every refusal names
the manifest row (or protocol row) that refused, so a person knows what to change; none holds a value.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from doors._refusal import Refusal

WHO = "keys"
# A request says when it was made; outside this window it is refused, inside it its id is remembered, so
# the set of remembered ids is bounded by the rate limits rather than by the session's length.
REPLAY_WINDOW_S = 120
SEAL_TTL_S = 30  # how long a sealed blob's `info` says it may be opened
DEFAULT_PER_MINUTE = 120
DEFAULT_MAX_RELEASES = 100_000
RATE_WINDOW_S = 60


@dataclass(frozen=True)
class SecretRow:
    """One `doors.keys.secrets.<name>` row, as the door holds it (never the value)."""

    name: str
    roles: frozenset[str]
    hosts: frozenset[str]
    per_minute: int = DEFAULT_PER_MINUTE
    max_releases: int = DEFAULT_MAX_RELEASES

    @property
    def row(self) -> str:
        return f"keys.secrets.{self.name}"

    @classmethod
    def from_row(cls, name: str, raw: Mapping[str, Any]) -> SecretRow:
        """The row from the contract's `secrets.<name>`; hosts compared in lowercase."""
        return cls(name, frozenset(str(r) for r in raw["roles"]), frozenset(str(h).lower() for h in raw["hosts"]),
                   int(raw.get("per_minute", DEFAULT_PER_MINUTE)), int(raw.get("max_releases", DEFAULT_MAX_RELEASES)))


def secret_rows(rows: Mapping[str, Any]) -> dict[str, SecretRow]:
    """Every secret row the contract names."""
    return {name: SecretRow.from_row(name, raw) for name, raw in dict(rows.get("secrets", {})).items()}


@dataclass(frozen=True)
class Ask:
    """One release request, parsed: who asked (from its SVID), for what, and when it says it asked."""

    requester_role: str | None
    requester_id: str
    name: str
    host: str
    request_id: str
    issued_at: int
    key_id: str  # a digest of the one-time public key: a key is used for one release only


@dataclass(frozen=True)
class Grant:
    """A release decided: the row that allowed it and when the sealed blob stops opening."""

    row: str
    expires_at: int


@dataclass
class Ledger:
    """What the door remembers between requests: ids and keys seen (within the window), releases made."""

    seen: dict[str, int] = field(default_factory=dict)  # request id or key id -> when it may be forgotten
    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    recent: dict[tuple[str, str], collections.deque[int]] = field(default_factory=dict)

    def forget_before(self, now: int) -> None:
        """Drop ids whose window has passed (a request that old is refused as stale anyway)."""
        for token in [t for t, until in self.seen.items() if until < now]:
            del self.seen[token]

    def rate(self, key: tuple[str, str], now: int) -> int:
        window = self.recent.setdefault(key, collections.deque())
        while window and window[0] <= now - RATE_WINDOW_S:
            window.popleft()
        return len(window)

    def record(self, ask: Ask, now: int) -> None:
        until = now + REPLAY_WINDOW_S
        self.seen[f"req:{ask.request_id}"] = until
        self.seen[f"key:{ask.key_id}"] = until
        key = (str(ask.requester_role), ask.name)
        self.counts[key] += 1
        self.recent.setdefault(key, collections.deque()).append(now)


def _refuse(status: int, row: str, detail: str, hint: str) -> Refusal:
    return Refusal(status, row, WHO, detail, hint)


def _check_row(row: SecretRow | None, ask: Ask) -> Refusal | None:
    if row is None:
        return _refuse(403, "keys.secrets", f"no secret named {ask.name!r} is kept in this session",
                       f"add doors.keys.secrets.{ask.name} to the manifest")
    if ask.requester_role not in row.roles:
        return _refuse(403, f"{row.row}.roles", f"the {ask.requester_role} door may not ask for {ask.name!r} "
                       f"(roles: {sorted(row.roles)})", f"add {ask.requester_role!r} to {row.row}.roles")
    if ask.host not in row.hosts:
        return _refuse(403, f"{row.row}.hosts", f"{ask.name!r} is not bound to host {ask.host!r} "
                       f"(hosts: {sorted(row.hosts)})", f"add {ask.host!r} to {row.row}.hosts")
    return None


def _check_fresh(ledger: Ledger, ask: Ask, now: int) -> Refusal | None:
    if abs(now - ask.issued_at) > REPLAY_WINDOW_S:
        return _refuse(403, "keys.request.issued_at", f"the request was made at {ask.issued_at}, {now - ask.issued_at}"
                       f" s from now (the window is {REPLAY_WINDOW_S} s)", "send a fresh request with the time now")
    if f"req:{ask.request_id}" in ledger.seen:
        return _refuse(403, "keys.request.request_id", "this request id was already used (a replay)",
                       "send each request with a new random request id")
    if f"key:{ask.key_id}" in ledger.seen:
        return _refuse(403, "keys.request.public_key", "this one-time public key was already used",
                       "make a new key pair for each request")
    return None


def _check_limits(ledger: Ledger, row: SecretRow, ask: Ask, now: int) -> Refusal | None:
    key = (str(ask.requester_role), ask.name)
    if ledger.counts[key] >= row.max_releases:
        return _refuse(429, f"{row.row}.max_releases", f"the {ask.requester_role} door had {row.max_releases} "
                       f"releases of {ask.name!r} this session", f"raise {row.row}.max_releases")
    if ledger.rate(key, now) >= row.per_minute:
        return _refuse(429, f"{row.row}.per_minute", f"the {ask.requester_role} door asked for {ask.name!r} "
                       f"{row.per_minute} times in the last minute", f"wait, or raise {row.row}.per_minute")
    return None


def decide(rows: Mapping[str, SecretRow], ledger: Ledger, ask: Ask, now: int) -> Grant | Refusal:
    """Release or refuse `ask` at time `now` (whole seconds); a release is recorded in `ledger`."""
    ledger.forget_before(now)
    row = rows.get(ask.name)
    refusal = _check_row(row, ask) or _check_fresh(ledger, ask, now)
    if refusal is None:
        assert row is not None
        refusal = _check_limits(ledger, row, ask, now)
    if refusal is not None:
        return refusal
    assert row is not None
    ledger.record(ask, now)
    return Grant(row.row, now + SEAL_TTL_S)
