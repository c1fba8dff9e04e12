"""Plain HTTP: decide on the URI authority, send one request on a fresh upstream connection, relay the
response (redirects included, never followed), and keep the client connection for the next request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import h11
import trio

from doors._secret_match import CARRY as KEPT_CARRY
from doors._secret_match import KeptSecret, SecretMatcher
from doors.net import _refusal as refusal
from doors.net._audit import Exchange
from doors.net._decide import Target, decide_target
from doors.net._framing import (
    buffered_body,
    downstream_headers,
    head_bytes,
    parse_absolute_target,
    unbound_secret,
    upstream_request,
)
from doors.net._refusal import ProxyRefusal
from doors.net._respond import phrase, send_refusal
from doors.net._upstream import open_upstream

if TYPE_CHECKING:
    from doors.net.proxy import Proxy

RECEIVE = 64 * 1024
_STREAM_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError)


class _Failed(Exception):
    """The exchange failed midway; carries the refusal to send if the response has not started."""

    def __init__(self, verdict: ProxyRefusal) -> None:
        super().__init__(verdict.refusal.detail)
        self.verdict = verdict


class _Receiver(Protocol):
    async def receive_some(self, max_bytes: int | None = ...) -> bytes | bytearray: ...


async def _next(conn: h11.Connection, stream: _Receiver, idle_s: float) -> object:
    """The next h11 event, reading from `stream` when h11 needs data."""
    while (event := conn.next_event()) is h11.NEED_DATA:
        with trio.move_on_after(idle_s) as scope:
            conn.receive_data(bytes(await stream.receive_some(RECEIVE)))
        if scope.cancelled_caught:
            raise _Failed(refusal.upstream_failed(504, "idle-timeout", f"nothing arrived for {idle_s} s"))
    return event


class _BodyGuard:
    """Scans the body for kept secrets not bound to the host, holding back the last KEPT_CARRY bytes until the
    next piece: a block is whole only once its last byte came, and none of its bytes has gone upstream by then."""

    def __init__(self, kept: SecretMatcher | None, host: str) -> None:
        self._kept, self._host = kept, host
        self._held = b""  # the body's last KEPT_CARRY bytes: scanned, not yet sent

    def release(self, data: bytes) -> bytes:
        """What of the held bytes and `data` may go upstream now; _Failed when a secret not bound is seen."""
        if self._kept is None:
            return data
        window = self._held + data
        secret = unbound_secret(self._kept, window, self._host, len(self._held))
        if secret is not None:
            raise _Failed(refusal.kept_secret(secret.row, self._host, sorted(secret.hosts)))
        self._held = window[-KEPT_CARRY:]
        return window[: len(window) - len(self._held)]

    def rest(self) -> bytes:
        """What was held back, at the body's end."""
        held, self._held = self._held, b""
        return held


async def _send_request(proxy: Proxy, client: h11.Connection, upstream: trio.SocketStream,
                        conn: h11.Connection, stream: trio.abc.Stream, first: h11.Request,
                        exchange: Exchange) -> None:
    """The request head and body, client → upstream; bad chunking from the client is a 400, a body carrying a
    kept secret not bound to the host a 403 (upstream then sees a cut request, never the secret's block)."""
    data = client.send(first) or b""
    guard = _BodyGuard(proxy.config.kept_secrets, exchange.host)
    if conn.client_is_waiting_for_100_continue:  # answer for the upstream, which never sees Expect's wait
        await stream.send_all(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
    while True:
        try:
            event = await _next(conn, stream, proxy.config.idle_timeout_s)
        except h11.RemoteProtocolError as exc:
            raise _Failed(refusal.bad_request("bad-body-framing", str(exc))) from exc
        if isinstance(event, h11.Data):
            released = guard.release(bytes(event.data))
            data += (client.send(h11.Data(data=released)) or b"") if released else b""
        elif isinstance(event, h11.EndOfMessage):
            held = guard.rest()
            data += (client.send(h11.Data(data=held)) or b"") if held else b""
            data += client.send(h11.EndOfMessage()) or b""
        else:
            raise _Failed(refusal.bad_request("bad-body-framing", "the client closed inside its request"))
        if data:
            await upstream.send_all(data)
            exchange.bytes_up += len(data)
            data = b""
        if isinstance(event, h11.EndOfMessage):
            return


async def _relay_response(proxy: Proxy, client: h11.Connection, upstream: trio.SocketStream,
                          conn: h11.Connection, stream: trio.abc.Stream, exchange: Exchange) -> None:
    """The response, upstream → client, re-framed by h11; 1xx interim responses are dropped."""
    counting = _Counting(upstream, exchange)
    started = False
    while True:
        try:
            event = await _next(client, counting, proxy.config.idle_timeout_s)
        except h11.RemoteProtocolError as exc:
            if started:
                raise
            raise _Failed(refusal.upstream_failed(502, "bad-upstream-response", str(exc))) from exc
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            started = True
            exchange.status = event.status_code
            reason = event.reason or phrase(event.status_code)
            headers = downstream_headers(event.headers)
            out = conn.send(h11.Response(status_code=event.status_code, reason=reason, headers=headers))
        elif isinstance(event, h11.Data):
            out = conn.send(h11.Data(data=event.data))
        elif isinstance(event, h11.EndOfMessage):
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            return
        else:
            raise _Failed(refusal.upstream_failed(502, "bad-upstream-response", "upstream closed mid-response"))
        await stream.send_all(out or b"")


class _Counting:
    """Counts bytes received from upstream into the audit record."""

    def __init__(self, stream: trio.SocketStream, exchange: Exchange) -> None:
        self._stream, self._exchange = stream, exchange

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await self._stream.receive_some(max_bytes)
        self._exchange.bytes_down += len(data)
        return data


def _kept_before_dialling(kept: SecretMatcher | None, conn: h11.Connection, request: h11.Request,
                          host: str) -> KeptSecret | None:
    """A kept secret not bound to `host` in the head, or in what of the body came with it: refused before any
    name is resolved (the rest of the body is scanned as it is relayed, by _BodyGuard)."""
    if kept is None:
        return None
    head = unbound_secret(kept, head_bytes(request), host)
    return head or unbound_secret(kept, buffered_body(request, bytes(conn.trailing_data[0])), host)


def _target(proxy: Proxy, request: h11.Request, role: str) -> Target | ProxyRefusal:
    try:
        authority, _ = parse_absolute_target(request.target)
    except (ValueError, UnicodeDecodeError) as exc:
        return refusal.bad_request("not-absolute-form", str(exc))
    return decide_target(proxy.config.allowlist, role, authority, 80)


async def _exchange(proxy: Proxy, stream: trio.abc.Stream, conn: h11.Connection, request: h11.Request,
                    role: str, exchange: Exchange) -> ProxyRefusal | None:
    """Do the request; return the refusal to send when it never reached the client as a response."""
    config = proxy.config
    target = _target(proxy, request, role)
    if isinstance(target, ProxyRefusal):
        return target
    exchange.host, exchange.port = str(target.host), target.port
    if (over := proxy.wildcard_names.admit(role, target)) is not None:
        return over
    secret = _kept_before_dialling(config.kept_secrets, conn, request, exchange.host)
    if secret is not None:
        return refusal.kept_secret(secret.row, exchange.host, sorted(secret.hosts))
    if not proxy.try_open(role):
        return refusal.too_many(f"role {role!r} has {config.max_tunnels} requests open", config.retry_after_s)
    try:
        unaudited = proxy.announce(exchange, target.rule.row)
        if unaudited is not None:
            return unaudited
        upstream = await open_upstream(proxy.resolver, config.addresses, target, exchange,
                                       config.resolve_timeout_s, config.connect_timeout_s, config.via)
        if isinstance(upstream, ProxyRefusal):
            return upstream
        exchange.allow(target.rule.row)
        async with upstream:
            _, path = parse_absolute_target(request.target)
            client = h11.Connection(h11.CLIENT)
            first = upstream_request(request, target.host, target.port, path)
            try:
                await _send_request(proxy, client, upstream, conn, stream, first, exchange)
                await _relay_response(proxy, client, upstream, conn, stream, exchange)
            except _Failed as failed:
                return failed.verdict
    finally:
        proxy.close_one(role)
    return None


async def forward(proxy: Proxy, stream: trio.abc.Stream, conn: h11.Connection, request: h11.Request,
                  role: str) -> bytes | None:
    """One plain-HTTP request (`net.open` before acting when allowed, `net.request` at the end); the bytes of
    the next request, or None to close."""
    exchange = proxy.exchange(role, request.method, _authority_only(request.target), request.headers)
    try:
        verdict = await _exchange(proxy, stream, conn, request, role, exchange)
        if verdict is not None:
            exchange.refuse(verdict.refusal.status, verdict.reason, verdict.refusal.row)
            if conn.our_state is not h11.SEND_RESPONSE:
                return None
            _drain_buffered(conn)
            await send_refusal(stream, conn, verdict, close=conn.their_state is not h11.DONE)
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            return bytes(conn.trailing_data[0])
        return None
    except (*_STREAM_ERRORS, h11.ProtocolError, OSError):
        exchange.reason = exchange.reason or "reset"
        return None
    finally:
        proxy.finish(exchange)


def _drain_buffered(conn: h11.Connection) -> None:
    """Discard what is already buffered of a refused request's body, so keep-alive can go on."""
    try:
        while conn.their_state is h11.SEND_BODY:
            if conn.next_event() in (h11.NEED_DATA, h11.PAUSED):
                return
    except h11.RemoteProtocolError:
        return


def _authority_only(target: bytes) -> bytes:
    """The scheme and authority of an absolute URI, without path or query (they may hold tokens)."""
    scheme, sep, rest = target.partition(b"://")
    if not sep:
        return target.split(b"/", 1)[0].split(b"?", 1)[0]
    return scheme + sep + rest.split(b"/", 1)[0].split(b"?", 1)[0]
