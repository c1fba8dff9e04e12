"""The release decision, table-driven: role, host, freshness, replay, one-time keys, limits. Pure."""

from __future__ import annotations

from dataclasses import replace

import pytest

from doors._refusal import Refusal
from doors.keys import Ask, Grant, Ledger, SecretRow, decide, secret_rows
from doors.keys._policy import REPLAY_WINDOW_S, SEAL_TTL_S

NOW = 1_800_000_000
ROWS = secret_rows({"secrets": {
    "anthropic": {"roles": ["model"], "hosts": ["api.anthropic.com"]},
    "github": {"roles": ["net", "model"], "hosts": ["api.github.com", "Uploads.GitHub.com"], "per_minute": 2,
               "max_releases": 3},
}})


def ask(role: str | None = "model", name: str = "anthropic", host: str = "api.anthropic.com", rid: str = "r" * 16,
        issued_at: int = NOW, key: str = "k1") -> Ask:
    return Ask(role, f"spiffe://td/s/{role}", name, host, rid, issued_at, key)


CASES = [
    # (what, ask, status or None for a release, the row)
    ("allowed", ask(), None, "keys.secrets.anthropic"),
    ("second role allowed", ask("net", "github", "api.github.com"), None, "keys.secrets.github"),
    ("host lowercased in the row", ask("net", "github", "uploads.github.com"), None, "keys.secrets.github"),
    ("unknown secret", ask(name="openai"), 403, "keys.secrets"),
    ("role not in roles", ask("net"), 403, "keys.secrets.anthropic.roles"),
    ("no role (no SVID role)", ask(None), 403, "keys.secrets.anthropic.roles"),
    ("app asks", ask("app"), 403, "keys.secrets.anthropic.roles"),
    ("cross host", ask(host="api.github.com"), 403, "keys.secrets.anthropic.hosts"),
    ("host suffix is not the host", ask(host="evil.api.anthropic.com"), 403, "keys.secrets.anthropic.hosts"),
    ("stale", ask(issued_at=NOW - REPLAY_WINDOW_S - 1), 403, "keys.request.issued_at"),
    ("from the future", ask(issued_at=NOW + REPLAY_WINDOW_S + 1), 403, "keys.request.issued_at"),
    ("edge of the window", ask(issued_at=NOW - REPLAY_WINDOW_S), None, "keys.secrets.anthropic"),
]


@pytest.mark.parametrize(("what", "request_", "status", "row"), CASES, ids=[c[0] for c in CASES])
def test_decide(what: str, request_: Ask, status: int | None, row: str) -> None:
    outcome = decide(ROWS, Ledger(), request_, NOW)
    if status is None:
        assert outcome == Grant(row, NOW + SEAL_TTL_S)
    else:
        assert isinstance(outcome, Refusal)
        assert (outcome.status, outcome.row, outcome.who) == (status, row, "keys")
        assert row.split(".")[-1] in outcome.hint or "request" in row or row == "keys.secrets"


def test_refusal_names_what_to_change() -> None:
    refusal = decide(ROWS, Ledger(), ask("net"), NOW)
    assert isinstance(refusal, Refusal)
    assert refusal.hint == "add 'net' to keys.secrets.anthropic.roles"


def test_replayed_request_id_refused_within_the_window() -> None:
    ledger = Ledger()
    assert isinstance(decide(ROWS, ledger, ask(), NOW), Grant)
    again = decide(ROWS, ledger, ask(key="k2"), NOW + 1)
    assert isinstance(again, Refusal) and again.row == "keys.request.request_id"
    # Once the window has passed, the id is forgotten, and a request that old is refused as stale instead.
    late = decide(ROWS, ledger, ask(key="k3"), NOW + 2 * REPLAY_WINDOW_S + 1)
    assert isinstance(late, Refusal) and late.row == "keys.request.issued_at"
    assert "req:" + "r" * 16 not in ledger.seen


def test_one_time_key_reused_refused() -> None:
    ledger = Ledger()
    assert isinstance(decide(ROWS, ledger, ask(), NOW), Grant)
    again = decide(ROWS, ledger, ask(rid="s" * 16), NOW)
    assert isinstance(again, Refusal) and again.row == "keys.request.public_key"


def test_refused_request_does_not_spend_its_id() -> None:
    ledger = Ledger()
    assert isinstance(decide(ROWS, ledger, ask(host="x.example"), NOW), Refusal)
    assert isinstance(decide(ROWS, ledger, ask(), NOW), Grant)


def _many(role: str, count: int, start: int, ledger: Ledger) -> list[Grant | Refusal]:
    base = ask(role, "github", "api.github.com")
    return [decide(ROWS, ledger, replace(base, request_id=f"{role}-{start + i:014d}", key_id=f"{role}{start + i}",
                                         issued_at=NOW + start + i), NOW + start + i) for i in range(count)]


def test_rate_per_role_and_secret() -> None:
    ledger = Ledger()
    first = _many("net", 3, 0, ledger)  # per_minute 2: the third within a minute is refused
    assert [type(o).__name__ for o in first] == ["Grant", "Grant", "Refusal"]
    assert isinstance(first[2], Refusal) and (first[2].status, first[2].row) == (429, "keys.secrets.github.per_minute")
    assert isinstance(_many("model", 1, 2, ledger)[0], Grant)  # another role has its own budget


def test_count_limit_per_role_and_secret() -> None:
    ledger = Ledger()
    outcomes = [*_many("net", 2, 0, ledger), *_many("net", 2, 100, ledger)]
    assert [type(o).__name__ for o in outcomes] == ["Grant", "Grant", "Grant", "Refusal"]
    last = outcomes[-1]
    assert isinstance(last, Refusal) and (last.status, last.row) == (429, "keys.secrets.github.max_releases")


def test_defaults_when_the_row_says_nothing() -> None:
    row = ROWS["anthropic"]
    assert row == SecretRow("anthropic", frozenset({"model"}), frozenset({"api.anthropic.com"}))
    assert row.per_minute > 0 and row.max_releases > 0
