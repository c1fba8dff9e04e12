"""Resolve once, check every answer (this host's own addresses too), dial exactly a checked address, or ask the
upstream proxy for one (`_via_proxy`)."""

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
from doors.net._via_proxy import Via, asked_authority, open_via, proxy_addresses, try_next


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
    via: Via | None = None,
) -> trio.SocketStream | ProxyRefusal:
    """A connected stream to a checked address of `target` (directly, or through the upstream proxy `via`), or
    the refusal (403, 502, 504)."""
    if via is not None and via.proxy.resolve_by_proxy:
        checked: list[IPAddress | None] = [None]  # the proxy resolves: the door asks for the name
    else:
        answers = await _answers(resolver, target, resolve_timeout_s)
        if isinstance(answers, ProxyRefusal):
            return answers
        exchange.answers = [str(ip) for ip in answers]
        found = check_answers(policy, target, answers, {ip for ip in answers if is_this_host(ip)})
        if isinstance(found, ProxyRefusal):
            return found
        checked = list(found)
    with trio.move_on_after(connect_timeout_s):
        if via is not None:
            return await _dial_via(via, resolver, policy, target, exchange, checked, resolve_timeout_s)
        return await _dial_direct(target, exchange, [ip for ip in checked if ip is not None])
    return refusal.upstream_failed(504, "connect-timeout", f"{target.host}:{target.port} did not answer in "
                                   f"{connect_timeout_s} s")


async def _dial_direct(target: Target, exchange: Exchange,
                       checked: list[IPAddress]) -> trio.SocketStream | ProxyRefusal:
    errors: list[str] = []
    for address in checked:
        exchange.address = str(address)
        try:
            return await _dial(address, target.port)
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    return refusal.upstream_failed(502, "connect-failed", f"{target.host}:{target.port}: {'; '.join(errors)}")


async def _dial_via(via: Via, resolver: Resolver, policy: AddressPolicy, target: Target, exchange: Exchange,
                    checked: list[IPAddress | None], resolve_timeout_s: float) -> trio.SocketStream | ProxyRefusal:
    """A tunnel at the upstream proxy to the first checked address it opens one to; the proxy is all it dials."""

    async def resolve(name: str) -> list[IPAddress] | ProxyRefusal:
        try:
            return await resolve_once(resolver, name, resolve_timeout_s)
        except ResolveError as exc:
            return refusal.upstream_proxy_failed(502, str(exc), f"upstream-proxy-{exc.reason}")

    proxies = await proxy_addresses(via, resolve, policy, is_this_host)
    if isinstance(proxies, ProxyRefusal):
        return proxies
    verdict = refusal.upstream_failed(502, "connect-failed", f"no address of {target.host} to ask for")
    for address in checked:
        exchange.address = "" if address is None else str(address)
        for proxy_address in proxies:
            exchange.proxy = f"{proxy_address}:{via.proxy.port}"
            try:
                found = await open_via(via, proxy_address, asked_authority(target.host, target.port, address))
            except OSError as exc:
                verdict = refusal.upstream_proxy_failed(502, f"the upstream proxy {exchange.proxy}: "
                                                        f"{exc.strerror or exc}", "upstream-proxy-unreachable")
                continue
            if not isinstance(found, ProxyRefusal):
                return found
            verdict = found
            break  # the proxy answered: another of its addresses would answer the same
        if not try_next(verdict):  # unreachable, or refused for this request: another address would not help
            return verdict
    return verdict
