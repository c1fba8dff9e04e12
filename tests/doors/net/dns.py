"""A small DNS server for the test names (dnslib frames the messages) and a resolver that asks it."""

from __future__ import annotations

import ipaddress
import socket
from collections import Counter
from dataclasses import dataclass, field

import dnslib
import trio

from doors.net._addr import IPAddress
from doors.net._resolve import ResolveError

SILENT = "silent"
NXDOMAIN = "nxdomain"


@dataclass
class Zone:
    """Answers per (name, qtype); `rebind` names answer from a list, one entry per query, last repeats."""

    static: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    rebind: dict[tuple[str, str], list[list[str]]] = field(default_factory=dict)
    silent: set[str] = field(default_factory=set)
    queries: Counter[tuple[str, str]] = field(default_factory=Counter)

    def answer(self, name: str, qtype: str) -> list[str] | str:
        """The addresses for this query, or SILENT / NXDOMAIN."""
        key = (name.lower().rstrip("."), qtype)
        self.queries[key] += 1
        if key[0] in self.silent:
            return SILENT
        if key in self.rebind:
            steps = self.rebind[key]
            return steps[min(self.queries[key], len(steps)) - 1]
        if key in self.static:
            return self.static[key]
        known = any(n == key[0] for n, _ in [*self.static, *self.rebind])
        return [] if known else NXDOMAIN


def _reply(query: dnslib.DNSRecord, zone: Zone) -> bytes | None:
    qname = str(query.q.qname)
    qtype = dnslib.QTYPE[query.q.qtype]
    answer = zone.answer(qname, qtype)
    if answer == SILENT:
        return None
    reply = query.reply()
    if answer == NXDOMAIN:
        reply.header.rcode = dnslib.RCODE.NXDOMAIN
        return bytes(reply.pack())
    for address in answer:
        rdata = dnslib.A(address) if qtype == "A" else dnslib.AAAA(ipaddress.ip_address(address).exploded)
        reply.add_answer(dnslib.RR(qname, query.q.qtype, rdata=rdata, ttl=0))
    return bytes(reply.pack())


async def serve_dns(sock: trio.socket.SocketType, zone: Zone) -> None:
    """Answer queries on a bound UDP socket forever."""
    while True:
        data, peer = await sock.recvfrom(4096)
        try:
            query = dnslib.DNSRecord.parse(data)
        except dnslib.DNSError:
            continue
        reply = _reply(query, zone)
        if reply is not None:
            await sock.sendto(reply, peer)


class TestDnsResolver:
    """The door's Resolver, asking the test DNS server (A then AAAA) from the current netns."""

    __test__ = False

    def __init__(self, server: tuple[str, int], timeout_s: float = 2.0) -> None:
        self.server = server
        self.timeout_s = timeout_s
        self.calls: Counter[str] = Counter()

    async def _ask(self, name: str, qtype: str) -> list[IPAddress]:
        query = dnslib.DNSRecord.question(name, qtype)
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with sock:
            await sock.sendto(bytes(query.pack()), self.server)
            data = await sock.recv(4096)
        reply = dnslib.DNSRecord.parse(data)
        if reply.header.id != query.header.id:
            raise ResolveError("resolution-failed", f"{name}: a reply to another query")
        if reply.header.rcode == dnslib.RCODE.NXDOMAIN:
            raise ResolveError("resolution-failed", f"{name}: no such name")
        return [ipaddress.ip_address(str(rr.rdata)) for rr in reply.rr if rr.rtype in (1, 28)]

    async def resolve(self, name: str) -> list[IPAddress]:
        """Every A and AAAA answer, A first."""
        self.calls[name] += 1
        answers = await self._ask(name, "A") + await self._ask(name, "AAAA")
        if not answers:
            raise ResolveError("resolution-failed", f"{name}: no address")
        return answers
