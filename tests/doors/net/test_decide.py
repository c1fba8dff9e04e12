"""The decision chain: target → addresses → ClientHello, each refusal with its status, reason and row."""

from __future__ import annotations

import ipaddress
import json

import pytest

from doors.net._addr import AddressPolicy
from doors.net._clienthello import Hello, Refused
from doors.net._decide import Target, check_answers, check_hello, decide_target
from doors.net._host import Host
from doors.net._policy import Allowlist
from doors.net._refusal import ProxyRefusal, too_many

allowlist = Allowlist.from_rows({"app": ["ok.example:443", "192.0.2.9:443", "*.wild.example:443"]})
policy = AddressPolicy()
ip = ipaddress.ip_address


def target(authority: str = "ok.example:443") -> Target:
    result = decide_target(allowlist, "app", authority, None)
    assert isinstance(result, Target)
    return result


@pytest.mark.parametrize(
    ("authority", "status", "reason", "row"),
    [
        ("evil.example:443", 403, "not-allowlisted", "doors.net.allow"),
        ("ok.example:80", 403, "not-allowlisted", "doors.net.allow"),
        ("wild.example:443", 403, "not-allowlisted", "doors.net.allow"),
        ("192.0.2.10:443", 403, "ip-literal-not-allowed", "doors.net.allow"),
        ("0xc0000209:443", 403, "non-canonical-number", "doors.net.allow"),
        ("ok.example", 400, "missing-port", "doors.net.framing"),
        ("user@ok.example:443", 400, "userinfo", "doors.net.framing"),
        ("a_b.example:443", 400, "bad-name", "doors.net.framing"),
    ],
)
def test_target_refusals(authority: str, status: int, reason: str, row: str) -> None:
    result = decide_target(allowlist, "app", authority, None)
    assert isinstance(result, ProxyRefusal)
    assert (result.refusal.status, result.reason, result.refusal.row) == (status, reason, row)


def test_target_allowed() -> None:
    assert target("OK.example.:443").host == Host("ok.example")
    assert target("a.wild.example:443").rule.text == "*.wild.example:443"
    assert decide_target(allowlist, "shell", "ok.example:443", None).refusal.status == 403  # type: ignore[union-attr]


def test_answers() -> None:
    t = target()
    answers = [ip("8.8.8.8"), ip("8.8.8.8"), ip("2606:4700::1")]
    assert check_answers(policy, t, answers) == [ip("8.8.8.8"), ip("2606:4700::1")]
    private = check_answers(policy, t, [ip("10.0.0.1")])
    assert isinstance(private, ProxyRefusal) and (private.refusal.status, private.reason) == (403, "private")
    assert private.refusal.row == "doors.net.public_addresses"
    mixed = check_answers(policy, t, [ip("8.8.8.8"), ip("127.0.0.1")])
    assert isinstance(mixed, ProxyRefusal) and mixed.reason == "mixed-answers-loopback"
    empty = check_answers(policy, t, [])
    assert isinstance(empty, ProxyRefusal) and empty.refusal.status == 502


@pytest.mark.parametrize(
    ("hello", "authority", "reason"),
    [
        (Hello("ok.example"), "ok.example:443", None),
        (Hello("OK.Example."), "ok.example:443", None),
        (Hello(None), "192.0.2.9:443", None),
        (Hello("evil.example"), "ok.example:443", "sni-mismatch"),
        (Hello(None), "ok.example:443", "missing-sni"),
        (Hello("ok.example"), "192.0.2.9:443", "sni-mismatch"),
        (Hello("b.wild.example"), "a.wild.example:443", "sni-mismatch"),
        (Hello("127.1"), "ok.example:443", "bad-sni"),
        (Refused("ech", "x"), "ok.example:443", "ech"),
    ],
)
def test_hello(hello: Hello | Refused, authority: str, reason: str | None) -> None:
    result = check_hello(target(authority), hello)
    assert (None if result is None else result.reason) == reason


def test_refusal_rendering() -> None:
    refusal = too_many("role app has 64 tunnels open")
    body = json.loads(refusal.body())
    assert body["error"] == "doors.net.limits" and body["who"] == "net" and body["reason"] == "too-many-tunnels"
    headers = dict(refusal.headers(len(refusal.body())))
    assert headers[b"x-sharness-refusal"] == b"too-many-tunnels; row=doors.net.limits"
    assert headers[b"retry-after"] == b"1"
