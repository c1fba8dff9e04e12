"""CONNECT: decide, dial, answer 200, check the ClientHello, then relay."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import h11
import trio

from doors.net import _refusal as refusal
from doors.net._audit import Exchange
from doors.net._clienthello import NEED_MORE, Hello, Refused, Result, parse_client_hello
from doors.net._decide import Target, check_hello, decide_target
from doors.net._refusal import ProxyRefusal
from doors.net._relay import relay
from doors.net._respond import TLS_ACCESS_DENIED, send_refusal
from doors.net._terminate import terminate
from doors.net._upstream import open_upstream

if TYPE_CHECKING:
    from doors.net.proxy import Proxy


async def _read_hello(proxy: Proxy, stream: trio.abc.Stream, buf: bytes) -> tuple[Result, bytes]:
    """Accumulate the client's first flight until the ClientHello reader decides."""
    with trio.move_on_after(proxy.config.head_timeout_s):
        while (result := parse_client_hello(buf, proxy.config.max_hello)) is NEED_MORE:
            try:
                data = await stream.receive_some(proxy.config.max_hello)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                return Refused("truncated-hello", "the client closed before its ClientHello ended"), buf
            buf += data
        return result, buf
    return Refused("hello-timeout", f"no ClientHello within {proxy.config.head_timeout_s} s"), buf


async def _first_flight(proxy: Proxy, stream: trio.abc.Stream, target: Target, buf: bytes,
                        exchange: Exchange) -> bytes | None:
    """The bytes to forward once the ClientHello passed; None (tunnel refused) otherwise."""
    if target.rule.raw_tcp:
        return buf
    hello, buf = await _read_hello(proxy, stream, buf)
    assert isinstance(hello, Hello | Refused)
    verdict = check_hello(target, hello)
    if verdict is None:
        exchange.sni = hello.sni if isinstance(hello, Hello) and hello.sni else ""
        return buf
    exchange.refuse(verdict.refusal.status, verdict.reason, verdict.refusal.row)
    if buf[:1] == b"\x16":  # a TLS client: say "access denied" in its own protocol
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(TLS_ACCESS_DENIED)
    return None


async def _refuse(proxy: Proxy, stream: trio.abc.Stream, conn: h11.Connection, exchange: Exchange,
                  verdict: ProxyRefusal) -> None:
    exchange.refuse(verdict.refusal.status, verdict.reason, verdict.refusal.row)
    await send_refusal(stream, conn, verdict, close=True)


async def tunnel(proxy: Proxy, stream: trio.abc.Stream, conn: h11.Connection, request: h11.Request,
                 role: str) -> None:
    """Handle one CONNECT request to its end: `net.open` before acting (when allowed), `net.request` at the end."""
    exchange = proxy.exchange(role, request.method, request.target, request.headers)
    try:
        await _tunnel(proxy, stream, conn, request, role, exchange)
    finally:
        proxy.finish(exchange)


async def _tunnel(proxy: Proxy, stream: trio.abc.Stream, conn: h11.Connection, request: h11.Request,
                  role: str, exchange: Exchange) -> None:
    config = proxy.config
    target = decide_target(config.allowlist, role, request.target.decode("utf-8", "replace"), None)
    if isinstance(target, ProxyRefusal):
        return await _refuse(proxy, stream, conn, exchange, target)
    exchange.host, exchange.port = str(target.host), target.port
    if (over := proxy.wildcard_names.admit(role, target)) is not None:
        return await _refuse(proxy, stream, conn, exchange, over)
    if not proxy.try_open(role):
        verdict = refusal.too_many(f"role {role!r} has {config.max_tunnels} tunnels open", config.retry_after_s)
        return await _refuse(proxy, stream, conn, exchange, verdict)
    try:
        unaudited = proxy.announce(exchange, target.rule.row)
        if unaudited is not None:
            return await _refuse(proxy, stream, conn, exchange, unaudited)
        upstream = await open_upstream(proxy.resolver, config.addresses, target, exchange,
                                       config.resolve_timeout_s, config.connect_timeout_s, config.via)
        if isinstance(upstream, ProxyRefusal):
            return await _refuse(proxy, stream, conn, exchange, upstream)
        async with upstream:
            established = h11.Response(status_code=200, headers=[], reason=b"Connection established")
            await stream.send_all(conn.send(established) or b"")
            exchange.allow(target.rule.row)
            exchange.status = 200
            first = await _first_flight(proxy, stream, target, bytes(conn.trailing_data[0]), exchange)
            if first is None:
                return None
            if config.egress is not None and config.egress.injection.bound(target.host, target.port):
                return await terminate(proxy, stream, upstream, target, first, role, exchange)
            try:
                await upstream.send_all(first)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                exchange.reason = "reset"
                return None
            result = await relay(stream, upstream, config.idle_timeout_s)
            exchange.bytes_up, exchange.bytes_down = result.up + len(first), result.down
            if result.ended != "closed":
                exchange.reason = result.ended
    finally:
        proxy.close_one(role)
    return None
