"""Addresses no manifest row can make a destination: this host's loopback, link-local (the cloud's metadata
service, 169.254.169.254), unspecified, multicast and broadcast; and IPv6 ranges that carry IPv4 addresses.

A door's internal ranges (`doors.net.internal`, `doors.model.internal_ranges`) are checked against these at
manifest load and again when a door starts; the net door checks each answer against them when it dials.
"""

from __future__ import annotations

import ipaddress

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# (network, reason): the first that holds an address names why it is never dialled.
NEVER_INTERNAL: tuple[tuple[_Network, str], ...] = tuple((ipaddress.ip_network(net), reason) for net, reason in (
    ("127.0.0.0/8", "loopback"), ("::1/128", "loopback"),
    ("169.254.0.0/16", "link-local"), ("fe80::/10", "link-local"),
    ("0.0.0.0/8", "unspecified"), ("::/128", "unspecified"),
    ("224.0.0.0/4", "multicast"), ("ff00::/8", "multicast"), ("255.255.255.255/32", "broadcast"),
))
# IPv6 forms whose address is an IPv4 one (mapped, translated, compatible, NAT64, 6to4, Teredo): a range
# of them would reach IPv4 loopback or link-local through the back door, so an internal range is IPv4.
EMBEDDED_V4: tuple[_Network, ...] = tuple(ipaddress.ip_network(net) for net in (
    "::ffff:0:0/96", "::ffff:0:0:0/96", "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32",
))


def internal_range_problem(text: str) -> str | None:
    """Why `text` cannot be an internal range (a CIDR network without host bits, reaching none of
    NEVER_INTERNAL nor EMBEDDED_V4), or None."""
    try:
        network = ipaddress.ip_network(text)
    except ValueError as exc:
        return f"{text!r} is not a network: {exc}"
    for never, reason in NEVER_INTERNAL:
        if network.version == never.version and network.overlaps(never):
            return f"{network} reaches {reason} addresses ({never}), which no row makes a destination"
    for embedded in EMBEDDED_V4:
        if network.version == embedded.version and network.overlaps(embedded):
            return f"{network} holds IPv6 forms of IPv4 addresses ({embedded}): write the IPv4 range instead"
    return None
