"""Address classification: every special-purpose range refused with its reason; public passes."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors.net._addr import IPV4_REFUSED, IPV6_REFUSED, AddressPolicy, classify

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "cgnat"),
        ("100.127.255.255", "cgnat"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("192.0.0.8", "reserved"),
        ("198.18.0.1", "reserved"),
        ("192.88.99.1", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.51.100.1", "documentation"),
        ("203.0.113.1", "documentation"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "ipv4-mapped"),
        ("::ffff:8.8.8.8", "ipv4-mapped"),
        ("::ffff:0:8.8.8.8", "ipv4-translated"),
        ("::127.0.0.1", "ipv4-compatible"),
        ("::8.8.8.8", "ipv4-compatible"),
        ("64:ff9b::127.0.0.1", "nat64-loopback"),
        ("64:ff9b::10.0.0.1", "nat64-private"),
        ("64:ff9b::169.254.169.254", "nat64-link-local"),
        ("64:ff9b:1::808:808", "nat64-local"),
        ("2002:7f00:1::", "6to4"),
        ("2002:808:808::1", "6to4"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"),
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("2001:2::1", "reserved"),
        ("2001:10::1", "reserved"),
        ("100::1", "reserved"),
        ("5f00::1", "reserved"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fe80::1", "link-local"),
        ("fec0::1", "private"),
        ("ff02::1", "multicast"),
        ("4000::1", "reserved"),
        ("::2", "ipv4-compatible"),
        ("1::1", "reserved"),
    ],
)
def test_refused_with_reason(address: str, reason: str) -> None:
    assert classify(ip(address)) == reason


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "2606:4700::1111",
                "2a00:1450:4001::1", "64:ff9b::808:808"]
)
def test_public_passes(address: str) -> None:
    assert classify(ip(address)) is None


@given(st.ip_addresses(v=4))
def test_v4_refused_iff_in_a_table(address: ipaddress.IPv4Address) -> None:
    in_table = any(address in net for net, _ in IPV4_REFUSED)
    assert (classify(address) is not None) == in_table


@given(st.ip_addresses(v=4))
def test_v4_mapped_never_passes(address: ipaddress.IPv4Address) -> None:
    assert classify(ip(f"::ffff:{address}")) == "ipv4-mapped"


@given(st.ip_addresses(v=4))
def test_nat64_follows_embedded(address: ipaddress.IPv4Address) -> None:
    inner = classify(address)
    outer = classify(ip(f"64:ff9b::{address}"))
    assert outer == (None if inner is None else f"nat64-{inner}")


@given(st.ip_addresses(v=6))
def test_v6_outside_global_unicast_refused(address: ipaddress.IPv6Address) -> None:
    if address not in ipaddress.IPv6Network("2000::/3") and address not in ipaddress.IPv6Network("64:ff9b::/96"):
        assert classify(address) is not None
    if any(address in net for net, _ in IPV6_REFUSED):
        assert classify(address) is not None


@given(st.ip_addresses())
def test_python_private_is_always_refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    # Our tables are at least as strict as the standard library's view.
    special = address.is_private or address.is_loopback or address.is_link_local or address.is_multicast
    nat64 = isinstance(address, ipaddress.IPv6Address) and address in ipaddress.IPv6Network("64:ff9b::/96")
    if special and not nat64:
        assert classify(address) is not None


def test_test_internet_marks_public() -> None:
    net = ipaddress.ip_network("198.51.100.0/24")
    assert classify(ip("198.51.100.7"), [net]) is None
    assert classify(ip("203.0.113.7"), [net]) == "documentation"
    assert classify(ip("64:ff9b::198.51.100.7"), [net]) is None


def test_own_listeners() -> None:
    policy = AddressPolicy(
        test_internet=(ipaddress.ip_network("198.51.100.0/24"),),
        own_listeners=frozenset({(ip("198.51.100.1"), 3128), (ip("0.0.0.0"), 9000)}),
    )
    assert policy.refusal(ip("198.51.100.1"), 3128) == "own-listener"
    assert policy.refusal(ip("198.51.100.1"), 443) is None
    assert policy.refusal(ip("198.51.100.9"), 9000) == "own-listener"
    assert policy.refusal(ip("10.0.0.1"), 443) == "private"
