"""A neighbour for real-session tests: a network namespace joined to this host by a veth pair, holding an address
that is not this host's (the net door refuses this host's own addresses, `own-host`, whatever a row says).

    with neighbour() as place:      # place.netns, place.address (10.250.N.2), place.host_address (10.250.N.1)
        sock = place.socket()       # a TCP socket made inside it: bind it to place.address

Everything is removed at the end of the block (the namespace, and with it the veth pair).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Iterator
from dataclasses import dataclass

from tests.doors.net import netns


@dataclass(frozen=True)
class Neighbour:
    netns: str
    address: str
    host_address: str

    def socket(self, family: int = socket.AF_INET) -> socket.socket:
        """A stream socket that lives in the neighbour's namespace."""
        return netns.socket_in(self.netns, family)


@contextlib.contextmanager
def neighbour() -> Iterator[Neighbour]:
    """A fresh neighbour at 10.250.N.2/30 (this host 10.250.N.1/30); removed after, pass or fail."""
    tag = secrets.token_hex(3)
    name, host_dev, peer_dev = f"sh-test-nb-{tag}", f"sh-nb{tag}h", f"sh-nb{tag}p"
    subnet = int(tag[:2], 16)
    place = Neighbour(name, f"10.250.{subnet}.2", f"10.250.{subnet}.1")
    try:
        netns.add(name)
        netns.ip("link", "add", host_dev, "type", "veth", "peer", "name", peer_dev, "netns", name)
        netns.ip("addr", "add", f"{place.host_address}/30", "dev", host_dev)
        netns.ip("link", "set", host_dev, "up")
        netns.ip("-n", name, "addr", "add", f"{place.address}/30", "dev", peer_dev)
        netns.ip("-n", name, "link", "set", peer_dev, "up")
        netns.wait_up(name, peer_dev)
        yield place
    finally:
        netns.remove(name)  # the veth pair goes with it, but the kernel may take a moment to drop the host end
        if os.path.exists(f"/sys/class/net/{host_dev}"):
            try:
                netns.ip("link", "del", host_dev)
            except RuntimeError:
                if os.path.exists(f"/sys/class/net/{host_dev}"):
                    raise  # still there: a real failure, not the kernel removing it meanwhile
