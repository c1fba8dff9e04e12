"""The confused-deputy rule as a table: each refusal names its row; every check is passed by exactly the
request that differs from a refused one in that check alone. Pure."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from launcher.daemon.deputy import Caller, Load, Reach, Refusal, admit, judge_reach, paths_to_check
from launcher.daemon.policy import LaunchdPolicy, load_policy
from launcher.manifest import Manifest, load_manifest
from pki.vocabulary import EXIT_HASH_MISMATCH, EXIT_NOT_ROOT

ALICE = Caller(uid=1000, gid=1000, groups=frozenset({1000, 3000}), pid=4242)
BOB = Caller(uid=1001, gid=1001, groups=frozenset({1001}), pid=4343)
WS = "/home/alice/ws"

BASE: dict[str, Any] = {
    "sharness": "manifest/v0",
    "session": {"name": "t", "trust_domain": "t.sharness.test", "ttl_s": 600},
    "workspace": WS,
    "app": {"argv": ["/usr/bin/python3", "agent.py"],
            "files": {"read": ["/usr/share/doc", "/home/alice/notes.txt"], "exec": ["/usr/bin/python3"]},
            "process": {"max_memory_mb": 256, "max_pids": 64}},
    "doors": {"fs": {"refuse_secrets": True, "max_file_bytes": 1048576, "max_total_bytes": 16777216,
                     "max_files": 1000},
              "keys": {"secrets": {"anthropic": {"from": "sealed:anthropic", "roles": ["net"],
                                                           "hosts": ["api.anthropic.com"]}}},
              "net": {"allow": {"app": ["api.anthropic.com:443"]}}},
    "edges": [["app", "fs"], ["app", "net"], ["net", "keys"]],
}


def manifest(change: Any = None) -> Manifest:
    document = copy.deepcopy(BASE)
    if change is not None:
        change(document)
    return load_manifest(json.dumps(document).encode())


def policy(**principal: object) -> LaunchdPolicy:
    row = {"uid": 1000, "max_sessions": 2,
           "secrets": [{"from": "sealed:anthropic", "hosts": ["api.anthropic.com"]}], **principal}
    document = {"sharness": "launchd/v0", "limits": {"max_sessions": 4}, "principals": [row]}
    return load_policy(json.dumps(document).encode(), lambda kind, name: None)


def as_refusal(verdict: object) -> Refusal:
    assert isinstance(verdict, Refusal), verdict
    return verdict


def test_a_request_within_everything_is_admitted() -> None:
    m = manifest()
    principal = admit(policy(), ALICE, m, m.sha256, Load(callers=1, total=3))
    assert not isinstance(principal, Refusal) and principal.row == "/principals/0"


def _secret_from(source: str) -> Any:
    return lambda d: d["doors"]["keys"]["secrets"]["anthropic"].update({"from": source})


def _secret_hosts(*hosts: str) -> Any:
    def change(d: dict[str, Any]) -> None:
        d["doors"]["keys"]["secrets"]["anthropic"]["hosts"] = list(hosts)
        d["doors"]["net"]["allow"]["app"] = [f"{host}:443" for host in hosts]
    return change


@pytest.mark.parametrize(("caller", "change", "sent", "load", "row", "policy_row", "code", "words"), [
    (ALICE, None, "sha256:" + "0" * 64, Load(0, 0), None, None, EXIT_HASH_MISMATCH, "hash mismatch"),
    (BOB, None, None, Load(0, 0), None, "/principals", EXIT_NOT_ROOT, "uid 1001 is not a principal"),
    (ALICE, None, None, Load(2, 2), None, "/principals/0/max_sessions", EXIT_NOT_ROOT, "runs 2 session(s)"),
    (ALICE, None, None, Load(0, 4), None, "/limits/max_sessions", EXIT_NOT_ROOT, "the daemon runs 4"),
    (ALICE, lambda d: d["session"].update({"ttl_s": 28801}), None, Load(0, 0), "/session/ttl_s",
     "/principals/0/max_ttl_s", EXIT_NOT_ROOT, "28801"),
    (ALICE, _secret_from("sealed:github"), None, Load(0, 0), "/doors/keys/secrets/anthropic/from",
     "/principals/0/secrets", EXIT_NOT_ROOT, "'sealed:github', which the policy does not grant"),
    (ALICE, _secret_from("/etc/sharness/secrets/anthropic"), None, Load(0, 0),
     "/doors/keys/secrets/anthropic/from", "/principals/0/secrets", EXIT_NOT_ROOT, "does not grant"),
    (ALICE, _secret_hosts("api.anthropic.com", "evil.example"), None, Load(0, 0),
     "/doors/keys/secrets/anthropic/hosts", "/principals/0/secrets", EXIT_NOT_ROOT, "evil.example"),
])
def test_each_admission_refusal_names_its_row(caller: Caller, change: Any, sent: str | None, load: Load,
                                              row: str | None, policy_row: str | None, code: int,
                                              words: str) -> None:
    m = manifest(change)
    refusal = as_refusal(admit(policy(), caller, m, sent or m.sha256, load))
    assert (refusal.row, refusal.policy_row, refusal.exit_code) == (row, policy_row, code)
    assert words in refusal.reason and "sharness-launchd refused" in refusal.words()


def test_a_group_principal_admits_a_member_only() -> None:
    document = {"sharness": "launchd/v0", "limits": {"max_sessions": 4}, "principals": [{"gid": 3000}]}
    by_group = load_policy(json.dumps(document).encode(), lambda kind, name: None)
    m = manifest(lambda d: d["doors"].pop("keys") and d.update(edges=[["app", "fs"], ["app", "net"]]))
    assert not isinstance(admit(by_group, ALICE, m, m.sha256, Load(0, 0)), Refusal)
    assert isinstance(admit(by_group, BOB, m, m.sha256, Load(0, 0)), Refusal)


def reach_all(**override: Reach) -> dict[str, Reach]:
    facts = {
        WS: Reach(WS, True, is_dir=True, owner=1000, readable=True, searchable=True),
        "/usr/share/doc": Reach("/usr/share/doc", True, is_dir=True, owner=0, readable=True, searchable=True),
        "/home/alice/notes.txt": Reach("/home/alice/notes.txt", True, owner=1000, readable=True),
        "/usr/bin/python3": Reach("/usr/bin/python3", True, owner=0, readable=True, searchable=True),
    }
    for fact in override.values():
        facts[fact.path] = fact
    return facts


def test_every_path_is_checked_once_in_order() -> None:
    assert paths_to_check(manifest()) == (WS, "/usr/share/doc", "/home/alice/notes.txt", "/usr/bin/python3")


def test_paths_within_the_callers_reach_pass() -> None:
    assert judge_reach(manifest(), ALICE, reach_all()) is None
    # an exec file needs x only; a read file needs r only
    assert judge_reach(manifest(), ALICE, reach_all(
        p=Reach("/usr/bin/python3", True, owner=0, readable=False, searchable=True),
        n=Reach("/home/alice/notes.txt", True, owner=0, readable=True, searchable=False))) is None


@pytest.mark.parametrize(("fact", "row", "words"), [
    (Reach(WS, False, error="Permission denied"), "/workspace", "cannot reach the workspace"),
    (Reach(WS, True, is_dir=True, owner=1001, readable=True, searchable=True), "/workspace", "owner uid 1001"),
    (Reach(WS, True, is_dir=False, owner=1000, readable=True), "/workspace", "not a directory the caller owns"),
    (Reach("/usr/share/doc", True, is_dir=True, owner=0, readable=True, searchable=False), "/app/files/read/0",
     "list and enter"),
    (Reach("/usr/share/doc", True, is_dir=True, owner=0, readable=False, searchable=True), "/app/files/read/0",
     "list and enter"),
    (Reach("/home/alice/notes.txt", True, owner=0, readable=False), "/app/files/read/1", "could not read"),
    (Reach("/home/alice/notes.txt", False, error="Permission denied"), "/app/files/read/1", "Permission denied"),
    (Reach("/usr/bin/python3", True, owner=0, readable=True, searchable=False), "/app/files/exec/0",
     "could not execute"),
])
def test_each_reach_refusal_names_its_row(fact: Reach, row: str, words: str) -> None:
    refusal = judge_reach(manifest(), ALICE, reach_all(f=fact))
    assert refusal is not None and refusal.row == row and words in refusal.reason, refusal


def _with_more_paths(document: dict[str, Any]) -> None:
    document["app"]["home_seed"] = "/home/alice/settings"
    document["doors"]["shell"] = {"workspace": "none", "files": {"read": ["/srv/r"], "exec": ["/srv/x"]}}
    document["doors"]["net"]["ca_bundle"] = "/etc/ca.pem"
    document["edges"].append(["app", "shell"])


def _reach_more(**override: Reach) -> dict[str, Reach]:
    return reach_all(s=Reach("/home/alice/settings", True, is_dir=True, owner=1000, readable=True, searchable=True),
                     r=Reach("/srv/r", True, owner=0, readable=True), x=Reach("/srv/x", True, owner=0, searchable=True),
                     c=Reach("/etc/ca.pem", True, owner=0, readable=True), **override)


def test_the_home_seed_and_every_doors_paths_are_checked_too() -> None:
    m = manifest(_with_more_paths)
    assert paths_to_check(m) == (WS, "/home/alice/settings", "/usr/share/doc", "/home/alice/notes.txt",
                                 "/usr/bin/python3", "/srv/r", "/srv/x", "/etc/ca.pem")
    assert judge_reach(m, ALICE, _reach_more()) is None


@pytest.mark.parametrize(("fact", "row", "words"), [
    (Reach("/home/alice/settings", True, is_dir=True, owner=0, readable=True, searchable=True), "/app/home_seed",
     "home seed /home/alice/settings is not a directory the caller owns"),
    (Reach("/home/alice/settings", False, error="Permission denied"), "/app/home_seed", "cannot reach the home seed"),
    (Reach("/srv/r", True, owner=0, readable=False), "/doors/shell/files/read/0", "could not read"),
    (Reach("/srv/x", True, owner=0, searchable=False), "/doors/shell/files/exec/0", "could not execute"),
    (Reach("/etc/ca.pem", True, owner=0, readable=False), "/doors/net/ca_bundle", "could not read"),
])
def test_each_new_reach_refusal_names_its_row(fact: Reach, row: str, words: str) -> None:
    refusal = judge_reach(manifest(_with_more_paths), ALICE, _reach_more(f=fact))
    assert refusal is not None and refusal.row == row and words in refusal.reason, refusal
