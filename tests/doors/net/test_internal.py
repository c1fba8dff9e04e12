"""Internal destinations (`doors.net.internal`): a named host:port may resolve into its named ranges, and only
there; loopback, link-local, this host and the door's own listeners stay refused whatever the rows say. Pure."""

from __future__ import annotations

import ipaddress

import pytest

from doors.net._addr import AddressPolicy, internal_refusal
from doors.net._decide import Target, check_answers, decide_target
from doors.net._policy import Allowlist, AllowlistError
from doors.net._refusal import ProxyRefusal
from pki.vocabulary import internal_range_problem

ip = ipaddress.ip_address
net = ipaddress.ip_network
ALLOW = {"app": ["pypi.corp.example:443", "git.corp.example:443", "tcp://db.corp.example:5432", "pypi.org:443",
                 "*.corp.example:443", "10.20.0.9:443"],
         "shell": ["pypi.corp.example:443"]}
INTERNAL = {"app": {"pypi.corp.example:443": ["10.20.0.0/16"], "git.corp.example:443": ["10.20.0.0/16", "fd00:20::/32"],
                    "tcp://db.corp.example:5432": ["172.16.5.0/24"]}}
allowlist = Allowlist.from_rows(ALLOW, INTERNAL)
OWN = frozenset({(ip("10.20.0.1"), 443)})
policy = AddressPolicy(own_listeners=OWN)


def target(authority: str, role: str = "app") -> Target:
    found = decide_target(allowlist, role, authority, None)
    assert isinstance(found, Target)
    return found


@pytest.mark.parametrize(("answer", "ranges", "reason"), [
    ("10.20.3.4", ["10.20.0.0/16"], None),
    ("10.21.3.4", ["10.20.0.0/16"], "outside-internal-ranges"),
    ("8.8.8.8", ["10.20.0.0/16"], "outside-internal-ranges"),  # public, but the row says where the host lives
    ("192.168.1.1", ["10.20.0.0/16"], "outside-internal-ranges"),  # a range the row could add
    ("fd00:20::5", ["fd00:20::/32"], None),
    ("fd00:21::5", ["fd00:20::/32"], "outside-internal-ranges"),
    ("::ffff:10.20.3.4", ["10.20.0.0/16"], "ipv4-mapped"),  # the v4 range does not cover its mapped form
    ("64:ff9b::a14:304", ["10.20.0.0/16"], None),  # NAT64 well-known: judged by the IPv4 it carries
    ("64:ff9b::7f00:1", ["10.20.0.0/16"], "loopback"),
    ("127.0.0.1", ["10.20.0.0/16"], "loopback"),
    ("169.254.169.254", ["10.20.0.0/16"], "link-local"),
    ("fe80::1", ["fd00:20::/32"], "link-local"),
    ("::1", ["fd00:20::/32"], "loopback"),
    ("0.0.0.0", ["10.20.0.0/16"], "unspecified"),
    ("224.0.0.1", ["10.20.0.0/16"], "multicast"),
    # A range that holds never-internal addresses cannot be loaded; if one arrived anyway, they stay refused.
    ("127.0.0.1", ["0.0.0.0/0"], "loopback"),
    ("169.254.169.254", ["169.254.0.0/16"], "link-local"),
    ("::1", ["::/0"], "loopback"),
])
def test_internal_refusal(answer: str, ranges: list[str], reason: str | None) -> None:
    assert internal_refusal(ip(answer), tuple(net(r) for r in ranges)) == reason


@pytest.mark.parametrize(("text", "problem"), [
    ("10.20.0.0/16", None),
    ("fd00:20::/32", None),
    ("203.0.113.80/32", None),  # a documentation range is not never-internal: the machine's own index lives there
    ("10.0.0.0/7", None),  # 10/7 = 10.0.0.0-11.255.255.255: private and public, no loopback
    ("0.0.0.0/0", "loopback"),
    ("127.0.0.0/8", "loopback"),
    ("127.0.0.1/32", "loopback"),
    ("96.0.0.0/3", "loopback"),  # holds 127/8
    ("169.254.169.254/32", "link-local"),
    ("fe80::/10", "link-local"),
    ("::/0", "loopback"),
    ("::ffff:10.20.0.0/112", "IPv6 forms of IPv4"),
    ("64:ff9b::/96", "IPv6 forms of IPv4"),
    ("2002::/16", "IPv6 forms of IPv4"),
    ("224.0.0.0/4", "multicast"),
    ("10.20.0.1/16", "host bits"),
    ("10.20.0.0", None),  # a bare address is a /32
    ("pypi.org", "not a network"),
])
def test_internal_range_problem(text: str, problem: str | None) -> None:
    found = internal_range_problem(text)
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_ranges_attach_to_the_named_rule_only() -> None:
    assert target("pypi.corp.example:443").rule.internal == (net("10.20.0.0/16"),)
    assert target("pypi.corp.example:443", "shell").rule.internal == ()  # the row is per role
    assert target("a.corp.example:443").rule.internal == ()  # the wildcard next to it stays public-only
    assert target("db.corp.example:5432").rule.internal == (net("172.16.5.0/24"),)
    assert target("pypi.org:443").rule.internal == ()


@pytest.mark.parametrize(("authority", "answers", "reason", "row"), [
    ("pypi.corp.example:443", ["10.20.3.4"], None, None),
    ("pypi.corp.example:443", ["10.20.3.4", "10.20.3.5"], None, None),
    ("git.corp.example:443", ["10.20.3.4", "fd00:20::7"], None, None),
    ("pypi.corp.example:443", ["10.21.0.1"], "outside-internal-ranges",
     "doors.net.internal.app['pypi.corp.example:443']"),
    ("pypi.corp.example:443", ["10.20.3.4", "93.184.216.34"], "mixed-answers-outside-internal-ranges",
     "doors.net.internal.app['pypi.corp.example:443']"),
    # The never-internal reason is named before the range a person could widen.
    ("pypi.corp.example:443", ["10.21.0.1", "127.0.0.1"], "loopback", "doors.net.public_addresses"),
    ("pypi.corp.example:443", ["10.20.0.5", "127.0.0.1"], "mixed-answers-loopback", "doors.net.public_addresses"),
    ("pypi.corp.example:443", ["169.254.169.254"], "link-local", "doors.net.public_addresses"),
    ("pypi.corp.example:443", ["10.20.0.1"], "own-listener", "doors.net.public_addresses"),
    ("pypi.corp.example:443", ["10.20.0.2"], "own-host", "doors.net.public_addresses"),  # see `local` below
    # Without an internal row a private answer is refused as before, for the same host in another role too.
    ("pypi.corp.example:443/shell", ["10.20.3.4"], "private", "doors.net.public_addresses"),
    ("a.corp.example:443", ["10.20.3.4"], "private", "doors.net.public_addresses"),
    ("pypi.org:443", ["203.0.113.80"], "documentation", "doors.net.public_addresses"),
])
def test_answers_of_internal_rules(authority: str, answers: list[str], reason: str | None, row: str | None) -> None:
    authority, _, role = authority.partition("/")
    found = check_answers(policy, target(authority, role or "app"), [ip(a) for a in answers], local={ip("10.20.0.2")})
    if reason is None:
        assert found == [ip(a) for a in answers]
    else:
        assert isinstance(found, ProxyRefusal)
        assert (found.refusal.status, found.reason, found.refusal.row) == (403, reason, row)


def test_this_hosts_own_address_is_refused_even_when_public() -> None:
    found = check_answers(AddressPolicy(), target("pypi.org:443"), [ip("93.184.216.34")], local={ip("93.184.216.34")})
    assert isinstance(found, ProxyRefusal) and found.reason == "own-host"


def test_outside_ranges_refusal_names_the_row_and_its_ranges() -> None:
    found = check_answers(policy, target("pypi.corp.example:443"), [ip("10.21.0.1")])
    assert isinstance(found, ProxyRefusal)
    assert "10.20.0.0/16" in found.refusal.detail and "doors.net.internal.app" in found.refusal.hint


@pytest.mark.parametrize(("internal", "words"), [
    ({"app": {"nope.corp.example:443": ["10.20.0.0/16"]}}, "is not in doors.net.allow.app"),
    ({"app": {"*.corp.example:443": ["10.20.0.0/16"]}}, "not a wildcard"),
    ({"app": {"10.20.0.9:443": ["10.20.0.0/16"]}}, "not a wildcard or an IP literal"),
    ({"app": {"pypi.corp.example:443": ["127.0.0.0/8"]}}, "loopback"),
    ({"app": {"pypi.corp.example:443": ["10.0.0.0/8", "169.254.0.0/16"]}}, "link-local"),
    ({"app": {"pypi.corp.example:443": []}}, "names no range"),
    ({"shell": {"git.corp.example:443": ["10.20.0.0/16"]}}, "is not in doors.net.allow.shell"),
])
def test_bad_internal_rows_are_refused_at_load(internal: dict[str, dict[str, list[str]]], words: str) -> None:
    with pytest.raises(AllowlistError, match=r"doors\.net\.internal") as refused:
        Allowlist.from_rows(ALLOW, internal)
    assert words in str(refused.value)


def test_overlapping_rows_each_keep_their_own_ranges() -> None:
    rows = Allowlist.from_rows(ALLOW, {"app": {"pypi.corp.example:443": ["10.20.0.0/16", "10.20.5.0/24"],
                                               "git.corp.example:443": ["10.20.5.0/24"]}})
    pypi = decide_target(rows, "app", "pypi.corp.example:443", None)
    git = decide_target(rows, "app", "git.corp.example:443", None)
    assert isinstance(pypi, Target) and isinstance(git, Target)
    assert check_answers(policy, pypi, [ip("10.20.9.9")]) == [ip("10.20.9.9")]
    refused = check_answers(policy, git, [ip("10.20.9.9")])
    assert isinstance(refused, ProxyRefusal) and refused.reason == "outside-internal-ranges"
