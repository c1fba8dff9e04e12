"""Address classification: which resolved addresses the door may dial. Pure, no I/O.

Tables follow the IANA special-purpose registries. IPv6 forms that carry an IPv4 address are
refused by prefix, except NAT64's well-known prefix 64:ff9b::/96 (RFC 6052), whose embedded
address is unwrapped and checked like any IPv4 answer, because DNS64 networks answer with it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from pki.vocabulary import EMBEDDED_V4, NEVER_INTERNAL

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Order matters: the first match names the reason.
IPV4_REFUSED: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "cgnat"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "reserved"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "reserved"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
)

NAT64_WELL_KNOWN = _V6("64:ff9b::/96")

IPV6_REFUSED: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::ffff:0:0/96"), "ipv4-mapped"),
    (_V6("::ffff:0:0:0/96"), "ipv4-translated"),
    (_V6("::/96"), "ipv4-compatible"),
    (_V6("64:ff9b:1::/48"), "nat64-local"),
    (_V6("100::/64"), "reserved"),
    (_V6("2001::/32"), "teredo"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("2001::/23"), "reserved"),
    (_V6("2002::/16"), "6to4"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("5f00::/16"), "reserved"),
    (_V6("fc00::/7"), "private"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "private"),
    (_V6("ff00::/8"), "multicast"),
)

GLOBAL_UNICAST_V6 = _V6("2000::/3")
OUTSIDE_INTERNAL = "outside-internal-ranges"


def _in_any(ip: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    return any(ip.version == net.version and ip in net for net in networks)


def classify(ip: IPAddress, test_internet: Iterable[IPNetwork] = ()) -> str | None:
    """None when the door may dial `ip`, else the reason (`private`, `loopback`, `teredo`, ...).

    `test_internet` marks networks as public; only tests and the bench pass it.
    """
    nets = tuple(test_internet)
    if _in_any(ip, nets):
        return None
    if isinstance(ip, ipaddress.IPv4Address):
        return next((reason for net, reason in IPV4_REFUSED if ip in net), None)
    if ip in NAT64_WELL_KNOWN:
        embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        inner = classify(embedded, nets)
        return None if inner is None else f"nat64-{inner}"
    reason = next((reason for net, reason in IPV6_REFUSED if ip in net), None)
    if reason is None and ip not in GLOBAL_UNICAST_V6:
        return "reserved"
    return reason


def internal_refusal(ip: IPAddress, ranges: Iterable[IPNetwork], test_internet: Iterable[IPNetwork] = ()) -> str | None:
    """None when `ip` lies in one of a row's internal `ranges` and is never-internal nowhere, else the reason.

    A NAT64 well-known answer is judged by the IPv4 address it carries. An answer outside the ranges is refused
    even when public (`outside-internal-ranges`): the row says where the host lives; the other IPv6 forms of
    IPv4 addresses (mapped, 6to4, ...) keep their own reason.
    """
    judged = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in NAT64_WELL_KNOWN else ip
    never = next((reason for net, reason in NEVER_INTERNAL if _in_any(judged, (net,))), None)
    if never is not None:
        return never
    if _in_any(judged, ranges):
        return None
    if _in_any(judged, EMBEDDED_V4):  # no range covers these (internal ranges are IPv4): say which form it was
        return classify(ip, test_internet) or OUTSIDE_INTERNAL
    return OUTSIDE_INTERNAL


@dataclass(frozen=True)
class AddressPolicy:
    """Classification plus the door's own listeners (no self-connection)."""

    test_internet: tuple[IPNetwork, ...] = ()
    own_listeners: frozenset[tuple[IPAddress, int]] = frozenset()

    def refusal(self, ip: IPAddress, port: int, internal: tuple[IPNetwork, ...] = ()) -> str | None:
        """None when `ip:port` may be dialled, else the reason; a row with `internal` ranges admits only them."""
        if self._is_own(ip, port):
            return "own-listener"
        if internal:
            return internal_refusal(ip, internal, self.test_internet)
        return classify(ip, self.test_internet)

    def _is_own(self, ip: IPAddress, port: int) -> bool:
        for own_ip, own_port in self.own_listeners:
            if own_port == port and (own_ip == ip or own_ip.is_unspecified):
                return True
        return False
