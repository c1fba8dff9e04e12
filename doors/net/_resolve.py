"""Name resolution for the door: one lookup per request, with a timeout the caller sets."""

from __future__ import annotations

import ipaddress
import socket
from typing import Protocol

import trio

from doors.net._addr import IPAddress


class ResolveError(Exception):
    """The name did not resolve; `reason` is a short stable token."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class Resolver(Protocol):
    """Anything that turns an A-label name into its addresses (tests point one at their DNS server)."""

    async def resolve(self, name: str) -> list[IPAddress]:
        """Every address the name has, in the order given; raise ResolveError when there is none."""
        ...


class SystemResolver:
    """getaddrinfo, the machine's resolver (trio abandons the lookup thread on timeout)."""

    async def resolve(self, name: str) -> list[IPAddress]:
        """Every A and AAAA answer for `name`, deduplicated, in the resolver's order."""
        try:
            infos = await trio.socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise ResolveError("resolution-failed", f"{name} did not resolve: {exc.strerror}") from exc
        answers: dict[IPAddress, None] = {}
        for family, _, _, _, sockaddr in infos:
            if family in (socket.AF_INET, socket.AF_INET6):
                answers[ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])] = None
        return list(answers)


async def resolve_once(resolver: Resolver, name: str, timeout_s: float) -> list[IPAddress]:
    """One lookup bounded by `timeout_s`; ResolveError on failure or timeout."""
    with trio.move_on_after(timeout_s):
        return await resolver.resolve(name)
    raise ResolveError("resolution-timeout", f"{name} did not resolve within {timeout_s} s")
