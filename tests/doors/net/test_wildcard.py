"""The cap on distinct names under wildcard rows: pure, and on the test network (the name past the cap is never
looked up, and its refusal is the request's one audit line)."""

from __future__ import annotations

import pytest

from doors.net._decide import Target, decide_target
from doors.net._policy import Allowlist
from doors.net._refusal import ProxyRefusal
from doors.net._wildcard import WildcardNames

from .client import connect
from .conftest import TestNet
from .test_proxy_connect import wait_for_audit

allowlist = Allowlist.from_rows({"app": ["*.wild.example:443", "ok.example:443"], "shell": ["*.wild.example:443"]})


def target(authority: str, role: str = "app") -> Target:
    found = decide_target(allowlist, role, authority, None)
    assert isinstance(found, Target)
    return found


def test_names_past_the_cap_are_refused_per_role_and_repeats_cost_nothing() -> None:
    names = WildcardNames(cap=2)
    assert names.admit("app", target("a.wild.example:443")) is None
    assert names.admit("app", target("A.wild.example.:443")) is None  # the same name, normalised
    assert names.admit("app", target("b.wild.example:443")) is None
    refused = names.admit("app", target("c.wild.example:443"))
    assert isinstance(refused, ProxyRefusal)
    assert (refused.refusal.status, refused.reason, refused.refusal.row) == (
        403, "wildcard-names-exhausted", "doors.net.max_wildcard_names")
    assert "c.wild.example" in refused.refusal.detail and "max_wildcard_names" in refused.refusal.hint
    assert names.admit("app", target("a.wild.example:443")) is None  # admitted before: still fine
    assert names.admit("app", target("ok.example:443")) is None  # a named row is not counted
    assert names.admit("shell", target("c.wild.example:443", "shell")) is None  # each role has its own count
    assert names.seen == {"app": {"a.wild.example", "b.wild.example"}, "shell": {"c.wild.example"}}


@pytest.mark.root
async def test_the_name_past_the_cap_is_never_resolved(net: TestNet) -> None:
    _, port = await net.start_proxy(max_wildcard_names=1)
    for authority, status in (("a.wild.sharness.test:443", 200), ("b.wild.sharness.test:443", 403),
                              ("a.wild.sharness.test:443", 200)):
        stream = await net.client(port)
        assert (await connect(stream, authority)).status == status
        await stream.aclose()
    await wait_for_audit(net, 3)
    assert [(e["host"], e["reason"]) for e in net.audit if e["reason"] == "wildcard-names-exhausted"] == [
        ("b.wild.sharness.test", "wildcard-names-exhausted")]
    assert net.zone.queries[("b.wild.sharness.test", "A")] == net.zone.queries[("b.wild.sharness.test", "AAAA")] == 0
    assert len(net.audit) == 3  # one line per request
