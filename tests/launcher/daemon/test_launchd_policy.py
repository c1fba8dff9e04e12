"""The daemon's policy file: strict, its own schema, names resolved once, a canonical hash. Pure."""

from __future__ import annotations

import json

import pytest

from launcher.daemon.policy import PolicyError, load_policy

ACCOUNTS = {("user", "alice"): 1000, ("group", "devs"): 2000}


def resolve(kind: str, name: str) -> int | None:
    return ACCOUNTS.get((kind, name))


def policy_bytes(**extra: object) -> bytes:
    document: dict[str, object] = {
        "sharness": "launchd/v0",
        "limits": {"max_sessions": 8},
        "principals": [
            {"user": "alice", "max_sessions": 2,
             "secrets": [{"from": "sealed:anthropic", "hosts": ["api.anthropic.com"]}]},
            {"group": "devs"},
        ],
    }
    document.update(extra)
    return json.dumps(document).encode()


def test_a_policy_loads_with_its_names_resolved_and_the_defaults() -> None:
    policy = load_policy(policy_bytes(), resolve)
    alice, devs = policy.principals
    assert (alice.uid, alice.gid, alice.max_sessions, alice.row) == (1000, None, 2, "/principals/0")
    assert alice.grant_for("sealed:anthropic") is not None and alice.grant_for("sealed:other") is None
    assert (devs.uid, devs.gid, devs.max_sessions, devs.max_ttl_s, devs.secrets) == (None, 2000, 1, 28800, ())
    assert policy.max_sessions == 8 and policy.sha256.startswith("sha256:")


def test_the_first_matching_principal_applies() -> None:
    policy = load_policy(policy_bytes(), resolve)
    assert policy.principal_for(1000, frozenset({2000})).row == "/principals/0"  # type: ignore[union-attr]
    assert policy.principal_for(1001, frozenset({5, 2000})).row == "/principals/1"  # type: ignore[union-attr]
    assert policy.principal_for(1001, frozenset({5})) is None


def test_the_hash_is_of_the_canonical_form_not_the_bytes() -> None:
    spaced = json.dumps(json.loads(policy_bytes()), indent=4).encode()
    assert load_policy(spaced, resolve).sha256 == load_policy(policy_bytes(), resolve).sha256
    assert load_policy(policy_bytes(limits={"max_sessions": 9}), resolve).sha256 != \
        load_policy(policy_bytes(), resolve).sha256


@pytest.mark.parametrize(("raw", "where", "words"), [
    (b'{"sharness": "launchd/v0", "sharness": "launchd/v0"}', "/sharness", "duplicate"),
    (policy_bytes(limits={"max_sessions": 1.5}), "/limits/max_sessions", "float"),
    (policy_bytes(sharness="launchd/v1"), "/sharness", "launchd/v0"),
    (policy_bytes(extra=1), "", "extra"),
    (policy_bytes(principals=[{"user": "alice", "uid": 5}]), "/principals/0", ""),
    (policy_bytes(principals=[{"max_sessions": 1}]), "/principals/0", ""),
    (policy_bytes(principals=[{"user": "mallory"}]), "/principals/0/user", "no user is named 'mallory'"),
    (policy_bytes(principals=[{"group": "nogroup-x"}]), "/principals/0/group", "no group"),
    (policy_bytes(principals=[{"uid": 1, "secrets": [{"from": "relative/path", "hosts": ["a.test"]}]}]),
     "/principals/0/secrets/0/from", ""),
    (policy_bytes(principals=[{"uid": 1, "secrets": [{"from": "sealed:a", "hosts": ["A.test"]}]}]),
     "/principals/0/secrets/0/hosts/0", ""),
    (policy_bytes(principals=[{"uid": 1, "secrets": [{"from": "sealed:a", "hosts": ["a.test"]},
                                                      {"from": "sealed:a", "hosts": ["b.test"]}]}]),
     "/principals/0/secrets", "twice"),
    (b"x" * (300 * 1024), "", "larger"),
])
def test_a_bad_policy_is_refused_naming_where(raw: bytes, where: str, words: str) -> None:
    with pytest.raises(PolicyError) as refused:
        load_policy(raw, resolve)
    assert refused.value.pointer == where, refused.value
    assert words in str(refused.value)
