"""Resolve once, check every answer, dial exactly a checked address."""

from __future__ import annotations

import ipaddress
import socket

import trio

from doors.net import _refusal as refusal
from doors.net._addr import AddressPolicy, IPAddress
from doors.net._audit import Exchange
from doors.net._decide import Target, check_answers
from doors.net._refusal import ProxyRefusal
from doors.net._resolve import ResolveError, Resolver, resolve_once


async def _answers(resolver: Resolver, target: Target, timeout_s: float) -> list[IPAddress] | ProxyRefusal:
    if target.host.ip is not None:
        return [target.host.ip]
    try:
        return await resolve_once(resolver, target.host.name, timeout_s)
    except ResolveError as exc:
        return refusal.upstream_failed(502, exc.reason, str(exc))


def is_this_host(address: IPAddress) -> bool:
    """Whether `address` is one of this host's own (the door's network namespace): the kernel routes it to
    itself and picks it as its own source. A UDP connect() only looks the route up; no packet leaves."""
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((str(address), 9))
        except OSError:
            return False  # no route: certainly not this host
        return bool(ipaddress.ip_address(probe.getsockname()[0].split("%", 1)[0]) == address)


async def _dial(address: IPAddress, port: int) -> trio.SocketStream:
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((str(address), port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


async def open_upstream(
    resolver: Resolver,
    policy: AddressPolicy,
    target: Target,
    exchange: Exchange,
    resolve_timeout_s: float,
    connect_timeout_s: float,
) -> trio.SocketStream | ProxyRefusal:
    """A connected stream to a checked address of `target`, or the refusal (403, 502, 504)."""
    answers = await _answers(resolver, target, resolve_timeout_s)
    if isinstance(answers, ProxyRefusal):
        return answers
    exchange.answers = [str(ip) for ip in answers]
    checked = check_answers(policy, target, answers, {ip for ip in answers if is_this_host(ip)})
    if isinstance(checked, ProxyRefusal):
        return checked
    errors: list[str] = []
    with trio.move_on_after(connect_timeout_s):
        for address in checked:
            exchange.address = str(address)
            try:
                return await _dial(address, target.port)
            except OSError as exc:
                errors.append(f"{address}: {exc.strerror or exc}")
        return refusal.upstream_failed(502, "connect-failed", f"{target.host}:{target.port}: {'; '.join(errors)}")
    return refusal.upstream_failed(504, "connect-timeout", f"{target.host}:{target.port} did not answer in "
                                   f"{connect_timeout_s} s")
