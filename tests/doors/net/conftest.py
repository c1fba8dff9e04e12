"""The test network: namespaces `sh-test-net-<tag>-{door,wan,app}`, test hosts, DNS, and the proxy.

    app ns (loopback only)          door ns                                wan ns ("the internet")
    127.0.0.1:3128  proxy  ──────►  veth 198.51.100.1/24  ◄──── veth ────► 198.51.100.2, .3 /24 (test internet)
    (listener made here, used                10.77.0.1/24                  10.77.0.2/24 (private: must stay unreached)
     by the proxy in the door ns)            2001:db8:5::1/64              2001:db8:5::2/64 (test internet)

The proxy runs in the test's trio loop; the main thread stays in the door ns for the test, and every
other socket is made in its own ns (a socket keeps the ns it was made in). 198.51.100.0/24 and
2001:db8:5::/64 are documentation ranges the door refuses; only these tests mark them as the test
internet (`AddressPolicy(test_internet=...)`). Everything is removed in `finally`, pass or fail.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import trio
import trustme

from doors.net._addr import AddressPolicy
from doors.net._policy import Allowlist
from doors.net.proxy import Proxy, ProxyConfig

from . import netns
from .dns import TestDnsResolver, Zone, serve_dns
from .servers import Log, serve_echo, serve_http, serve_https

DOOR_V4, WAN_V4, WAN2_V4, BLACKHOLE_V4 = "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.99"
DOOR_PRIV, WAN_PRIV = "10.77.0.1", "10.77.0.2"
DOOR_V6, WAN_V6 = "2001:db8:5::1", "2001:db8:5::2"
TEST_INTERNET = (ipaddress.ip_network("198.51.100.0/24"), ipaddress.ip_network("2001:db8:5::/64"))
PROXY_PORT = 3128

ALLOW = {
    "app": [
        "ok.sharness.test:443", "*.wild.sharness.test:443", "plain.sharness.test:80", "tcp://raw.sharness.test:7",
        "ok.sharness.test:7", "private.sharness.test:443", "private.sharness.test:80", "mixed.sharness.test:443",
        "rebind.sharness.test:443", "loop.sharness.test:443", "self.sharness.test:3128", "blackhole.sharness.test:443",
        "closed.sharness.test:443", "silent.sharness.test:443", "nx.sharness.test:443", "v6.sharness.test:443",
        "mapped.sharness.test:443", "nat64.sharness.test:443", "198.51.100.2:443", "10.77.0.2:80",
        "redirect.sharness.test:80",
    ],
    "shell": ["ok.sharness.test:443"],
}


def make_zone() -> Zone:
    """The test names: public, private, mixed, rebinding, silent and odd IPv6 forms."""
    a = {
        "ok": [WAN_V4], "a.wild": [WAN_V4], "plain": [WAN_V4], "raw": [WAN_V4], "redirect": [WAN_V4],
        "private": [WAN_PRIV], "loop": ["127.0.0.1"], "mixed": [WAN_V4, WAN_PRIV], "self": [DOOR_V4],
        "blackhole": [BLACKHOLE_V4], "closed": [WAN2_V4], "v6": [], "mapped": [], "nat64": [],
    }
    zone = Zone(static={(f"{k}.sharness.test", "A"): v for k, v in a.items()})
    for name in a:
        zone.static.setdefault((f"{name}.sharness.test", "AAAA"), [])
    zone.static[("v6.sharness.test", "AAAA")] = [WAN_V6]
    zone.static[("mapped.sharness.test", "AAAA")] = [f"::ffff:{WAN_PRIV}"]
    zone.static[("nat64.sharness.test", "AAAA")] = [f"64:ff9b::{WAN_PRIV}"]
    zone.rebind[("rebind.sharness.test", "A")] = [[WAN_V4], [WAN_PRIV]]
    zone.static[("rebind.sharness.test", "AAAA")] = []
    zone.silent.add("silent.sharness.test")
    return zone


@dataclass
class Names:
    tag: str
    door: str
    wan: str
    app: str


@pytest.fixture
def namespaces() -> Iterator[Names]:
    """Three namespaces and a veth pair; removed whatever happens."""
    tag = secrets.token_hex(3)
    names = Names(tag, f"sh-test-net-{tag}-door", f"sh-test-net-{tag}-wan", f"sh-test-net-{tag}-app")
    veth_door, veth_wan = f"sh-tn{tag}d", f"sh-tn{tag}w"
    try:
        for name in (names.door, names.wan, names.app):
            netns.add(name)
        netns.ip("link", "add", veth_door, "netns", names.door, "type", "veth", "peer", "name", veth_wan,
                 "netns", names.wan)
        for ns, dev, addrs in ((names.door, veth_door, (f"{DOOR_V4}/24", f"{DOOR_PRIV}/24")),
                               (names.wan, veth_wan, (f"{WAN_V4}/24", f"{WAN2_V4}/24", f"{WAN_PRIV}/24"))):
            for addr in addrs:
                netns.ip("-n", ns, "addr", "add", addr, "dev", dev)
            netns.ip("-n", ns, "addr", "add", f"{DOOR_V6 if ns == names.door else WAN_V6}/64", "dev", dev, "nodad")
            netns.ip("-n", ns, "link", "set", dev, "up")
        netns.wait_up(names.door, veth_door)
        netns.wait_up(names.wan, veth_wan)
        # A neighbour nobody answers for: SYNs to it vanish, so a dial there times out.
        netns.ip("-n", names.door, "neigh", "add", BLACKHOLE_V4, "lladdr", "02:00:5e:00:00:99", "dev", veth_door,
                 "nud", "permanent")
        yield names
    finally:
        for name in (names.app, names.wan, names.door):
            netns.remove(name)


def listen_in(ns: str, host: str, port: int, kind: int = socket.SOCK_STREAM) -> trio.socket.SocketType:
    """A bound (and, for TCP, listening) trio socket inside `ns`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = netns.socket_in(ns, family, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    if kind == socket.SOCK_STREAM:
        sock.listen(64)
    return trio.socket.from_stdlib_socket(sock)


@dataclass
class TestNet:
    """Everything a test needs: names, CA, zone, logs per host, audit events, and the default proxy."""

    __test__ = False

    names: Names
    ca: trustme.CA
    zone: Zone
    resolver: TestDnsResolver
    nursery: trio.Nursery
    logs: dict[str, Log] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)  # each request's closing net.request
    opened: list[dict[str, Any]] = field(default_factory=list)  # net.open, queued before the door resolves
    proxy: Proxy | None = None
    proxy_port: int = PROXY_PORT
    _next_port: int = PROXY_PORT + 1

    def config(self, **overrides: Any) -> ProxyConfig:
        own = frozenset({(ipaddress.ip_address("127.0.0.1"), PROXY_PORT), (ipaddress.ip_address(DOOR_V4), PROXY_PORT)})
        base = ProxyConfig(
            allowlist=Allowlist.from_rows(ALLOW),
            addresses=AddressPolicy(test_internet=TEST_INTERNET, own_listeners=own),
            resolve_timeout_s=1.0, connect_timeout_s=1.0, idle_timeout_s=5.0, head_timeout_s=2.0,
        )
        return replace(base, **overrides)

    async def start_proxy(self, role: str = "app", **overrides: Any) -> tuple[Proxy, int]:
        """Another proxy with a changed config, on its own port in the app ns."""
        port, self._next_port = self._next_port, self._next_port + 1
        proxy = Proxy(self.config(**overrides), self.opened.append, self.resolver, report=self.audit.append)
        listener = trio.SocketListener(listen_in(self.names.app, "127.0.0.1", port))
        await self.nursery.start(proxy.serve, listener, role)
        return proxy, port

    async def client(self, port: int | None = None) -> trio.SocketStream:
        """A TCP connection from the app ns to a proxy there."""
        sock = trio.socket.from_stdlib_socket(netns.socket_in(self.names.app))
        await sock.connect(("127.0.0.1", port or self.proxy_port))
        return trio.SocketStream(sock)

    def tls_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context

    def events(self, **match: Any) -> list[dict[str, Any]]:
        return [e for e in self.audit if all(e.get(k) == v for k, v in match.items())]


async def _start_hosts(net: TestNet, wan: str) -> None:
    cert = net.ca.issue_cert("ok.sharness.test", "a.wild.sharness.test", "rebind.sharness.test",
                             "mixed.sharness.test", "v6.sharness.test", "private.sharness.test", "198.51.100.2")
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_context)
    hosts = [
        ("public-http", WAN_V4, 80, serve_http, ()), ("public-https", WAN_V4, 443, serve_https, (server_context,)),
        ("v6-https", WAN_V6, 443, serve_https, (server_context,)), ("echo", WAN_V4, 7, serve_echo, ()),
        ("private-http", WAN_PRIV, 80, serve_http, ()),
        ("private-https", WAN_PRIV, 443, serve_https, (server_context,)),
    ]
    for name, host, port, serve, extra in hosts:
        net.logs[name] = Log(name)
        net.nursery.start_soon(serve, trio.SocketListener(listen_in(wan, host, port)), net.logs[name], *extra)
    net.nursery.start_soon(serve_dns, listen_in(wan, WAN_V4, 53, socket.SOCK_DGRAM), net.zone)


@pytest.fixture
async def net(namespaces: Names, nursery: trio.Nursery) -> AsyncIterator[TestNet]:
    """The test network with its hosts running and the default proxy (role app) listening."""
    zone = make_zone()
    test_net = TestNet(namespaces, trustme.CA(), zone, TestDnsResolver((WAN_V4, 53)), nursery)
    with netns.entered(namespaces.door):
        await _start_hosts(test_net, namespaces.wan)
        proxy = Proxy(test_net.config(), test_net.opened.append, test_net.resolver, report=test_net.audit.append)
        test_net.proxy = proxy
        app_listener = trio.SocketListener(listen_in(namespaces.app, "127.0.0.1", PROXY_PORT))
        own_listener = trio.SocketListener(listen_in(namespaces.door, DOOR_V4, PROXY_PORT))
        await nursery.start(proxy.serve, app_listener, "app")
        await nursery.start(proxy.serve, own_listener, "app")
        yield test_net
        nursery.cancel_scope.cancel()
