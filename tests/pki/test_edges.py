"""The edge policy decides exactly the listed pairs and says which manifest row to change."""

from __future__ import annotations

import itertools

import pytest

from pki.edges import EdgeDecision, EdgePolicy
from pki.vocabulary import DEFAULT_EDGES, ROLES

EXPECTED = {
    ("app", "fs"),
    ("app", "net"),
    ("app", "shell"),
    ("app", "model"),
    ("net", "keys"),
    ("model", "keys"),
    ("shell", "net"),
}


def test_default_edges_are_the_design_list() -> None:
    assert DEFAULT_EDGES == EXPECTED
    assert isinstance(DEFAULT_EDGES, frozenset)


@pytest.mark.parametrize(("client", "server"), list(itertools.product(ROLES, ROLES)))
def test_full_matrix(client: str, server: str) -> None:
    decision = EdgePolicy(DEFAULT_EDGES).decide(client, server)
    assert decision.allowed == ((client, server) in EXPECTED)
    assert f"{client}->{server}" in decision.reason
    assert "`edges`" in decision.reason
    if not decision.allowed:
        assert "add it" in decision.reason


def test_decision_is_frozen() -> None:
    decision = EdgePolicy(DEFAULT_EDGES).decide("app", "fs")
    assert decision == EdgeDecision(True, decision.reason)
    with pytest.raises(AttributeError):
        decision.allowed = False  # type: ignore[misc]


def test_unknown_role_is_refused_not_raised() -> None:
    assert not EdgePolicy(DEFAULT_EDGES).decide("root", "fs").allowed


def test_clients_and_servers() -> None:
    policy = EdgePolicy(DEFAULT_EDGES)
    assert policy.clients_of("keys") == {"net", "model"}
    assert policy.clients_of("net") == {"app", "shell"}
    assert policy.clients_of("app") == frozenset()
    assert policy.servers_of("app") == {"fs", "net", "shell", "model"}
    assert policy.servers_of("keys") == frozenset()


def test_custom_edges_replace_the_defaults() -> None:
    policy = EdgePolicy(frozenset({("app", "keys")}))
    assert policy.decide("app", "keys").allowed
    assert not policy.decide("app", "fs").allowed


def test_edges_from_a_set_become_frozen() -> None:
    policy = EdgePolicy({("app", "fs")})  # type: ignore[arg-type]
    assert isinstance(policy.edges, frozenset)


@pytest.mark.parametrize(
    ("edges", "reason"),
    [
        ({("app", "root")}, "role 'root' is not one of"),
        ({("app", "app")}, "does not call itself"),
        ({("app",)}, "is not a \\(client role, server role\\) pair"),
    ],
)
def test_bad_edges_are_refused(edges: set[tuple[str, ...]], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        EdgePolicy(frozenset(edges))  # type: ignore[arg-type]
