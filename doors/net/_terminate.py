"""A CONNECT to a bound host, terminated: the door is the app's TLS server (the egress leaf for that host) and the
upstream's TLS client (verified), and relays HTTP/1.1 between them one request at a time.

Each request, in order: framing (the same checks as plain HTTP) → origin-form and Host equal to the CONNECT host
(421 otherwise) → the rule its path matches → `net.open` queued → the secret released by the keys door for this
request → the request upstream, every credential the app sent dropped and the bound one injected → the response
back, any form of the secret in its fields or body redacted → `net.request` with the credential's name.
The upstream connection is kept while both sides keep theirs; when it closes, the app's connection closes with it.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import h11
import trio

from doors._refusal import DoorRefused
from doors.net import _refusal as refusal
from doors.net._audit import Exchange
from doors.net._decide import Target
from doors.net._framing import FramingError, downstream_headers, start_request
from doors.net._inject import InjectRule, Redactor, redact, upstream_request
from doors.net._refusal import ProxyRefusal
from doors.net._respond import phrase, send_refusal
from doors.net._tls_pump import DrainingTls

if TYPE_CHECKING:
    from doors.net.proxy import Proxy

RECEIVE = 256 * 1024  # fewer turns of the h11 loop per MB (measured: bench/inject_bench.py)
_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, h11.ProtocolError, OSError)


class _Failed(Exception):
    """The exchange failed; carries the refusal to send if the response has not started."""

    def __init__(self, verdict: ProxyRefusal) -> None:
        super().__init__(verdict.refusal.detail)
        self.verdict = verdict


async def terminate(proxy: Proxy, client: trio.abc.Stream, upstream: trio.SocketStream, target: Target,
                    first: bytes, role: str, tunnel: Exchange) -> None:
    """Serve the app's requests to bound `target` on `client` (its ClientHello in `first`) until either side ends."""
    egress = proxy.config.egress
    assert egress is not None
    context = egress.server_contexts.get(target.host.name)
    if context is None:  # the launcher mints a leaf for every bound host: this is a broken session
        tunnel.refuse(502, "no-egress-leaf", refusal.ROW_INJECT)
        return
    app_tls = DrainingTls(client, context, server_side=True, first=first)
    up_tls = DrainingTls(upstream, egress.upstream_context, server_hostname=target.host.name)
    tunnel.reason = "terminated"
    with trio.move_on_after(proxy.config.head_timeout_s) as scope:
        try:
            await app_tls.do_handshake()
        except _BROKEN:
            tunnel.reason = "client-tls-refused"
            return
    if scope.cancelled_caught:
        tunnel.reason = "client-tls-timeout"
        return
    await _Session(proxy, app_tls, up_tls, target, role).serve()


class _Session:
    """One terminated tunnel: the app's TLS stream, the upstream's, and the h11 state of the upstream side."""

    def __init__(self, proxy: Proxy, app: DrainingTls, upstream: DrainingTls, target: Target, role: str) -> None:
        self.proxy, self.app, self.upstream, self.target, self.role = proxy, app, upstream, target, role
        self.upstream_conn = h11.Connection(h11.CLIENT)
        self.upstream_ready = False

    async def serve(self) -> None:
        buf = b""
        while True:
            parsed, buf = await self._read_request(buf)
            if parsed is None:
                return
            if isinstance(parsed, FramingError):
                exchange = self.proxy.exchange(self.role, b"", b"")
                exchange.refuse(400, parsed.reason, refusal.ROW_FRAMING)
                self.proxy.finish(exchange)
                await send_refusal(self.app, None, refusal.bad_request(parsed.reason, parsed.detail))
                return
            conn, request = parsed
            if not await self._one(conn, request):
                return
            conn.start_next_cycle()
            buf = bytes(conn.trailing_data[0])

    async def _read_request(
        self, buf: bytes,
    ) -> tuple[tuple[h11.Connection, h11.Request] | FramingError | None, bytes]:
        """(h11 state + request | FramingError | None when the app left or stalled, bytes so far)."""
        with trio.move_on_after(self.proxy.config.idle_timeout_s):
            while (parsed := start_request(buf)) is None:
                try:
                    data = await self.app.receive_some(RECEIVE)
                except _BROKEN:
                    return None, buf
                if not data:
                    return None, buf
                buf += data
            return parsed, buf
        return None, buf

    async def _one(self, conn: h11.Connection, request: h11.Request) -> bool:
        """One request to its end; True when both connections go on to the next one."""
        path = request.target.split(b"?", 1)[0].decode("utf-8", "replace")
        host, port = self.target.host, self.target.port
        exchange = self.proxy.exchange(self.role, request.method, f"https://{host}:{port}".encode())
        exchange.host, exchange.port, exchange.path = str(host), port, path or "-"
        try:
            verdict = await self._exchange(conn, request, path, exchange)
            if verdict is not None:
                exchange.refuse(verdict.refusal.status, verdict.reason, verdict.refusal.row)
                if conn.our_state is h11.SEND_RESPONSE:
                    await send_refusal(self.app, conn, verdict, close=True)
                return False
            return conn.our_state is h11.DONE and conn.their_state is h11.DONE
        except _BROKEN:
            exchange.reason = exchange.reason or "reset"
            return False
        finally:
            self.proxy.finish(exchange)

    async def _exchange(self, conn: h11.Connection, request: h11.Request, path: str,
                        exchange: Exchange) -> ProxyRefusal | None:
        misdirected = _misdirected(request, self.target)
        if misdirected is not None:
            return misdirected
        egress = self.proxy.config.egress
        assert egress is not None
        rule = egress.injection.match(self.target.host, self.target.port, path)
        unaudited = self.proxy.announce(exchange, rule.row if rule else self.target.rule.row)
        if unaudited is not None:
            return unaudited
        secret = await self._release(rule) if rule is not None else None
        if isinstance(secret, ProxyRefusal):
            return secret
        exchange.allow(rule.row if rule else self.target.rule.row)
        if rule is not None:
            exchange.reason, exchange.credential = "injected", rule.secret
        try:
            ready = await self._upstream_ready()
            if ready is not None:
                return ready
            forms = rule.forms(secret) if rule is not None and secret is not None else ()
            credential = (rule.header, rule.header_value(secret)) if rule is not None and secret is not None else None
            stripped = egress.injection.stripped(self.target.host, self.target.port)
            first = upstream_request(request, self.target.host, self.target.port, stripped, credential)
            del secret, credential  # the released secret goes with this request
            await self._send_request(conn, first, exchange)
            await self._relay_response(conn, exchange, forms)
        except _Failed as failed:
            return failed.verdict
        return None

    async def _release(self, rule: InjectRule) -> bytes | ProxyRefusal:
        source = self.proxy.credentials
        if source is None:
            return refusal.no_credential_source(rule.secret)
        try:
            return await source(rule.secret, self.target.host.name)
        except DoorRefused as refused:
            return refusal.credential_refused(refused.refusal)
        except OSError as exc:
            return refusal.upstream_failed(502, "keys-unreachable", f"the keys door did not answer: {exc.strerror}")

    async def _upstream_ready(self) -> ProxyRefusal | None:
        """The upstream's TLS handshake, once per tunnel: verified against the trust the manifest names."""
        if self.upstream_ready:
            return None
        try:
            with trio.fail_after(self.proxy.config.connect_timeout_s):
                await self.upstream.do_handshake()
        except (trio.BrokenResourceError, trio.TooSlowError, ssl.SSLError) as exc:
            return refusal.upstream_failed(502, "upstream-tls", f"TLS to {self.target.host}: {_why(exc)}")
        self.upstream_ready = True
        return None

    async def _next(self, conn: h11.Connection, stream: trio.abc.ReceiveStream, exchange: Exchange | None) -> object:
        idle_s = self.proxy.config.idle_timeout_s
        while (event := conn.next_event()) is h11.NEED_DATA:
            with trio.move_on_after(idle_s) as scope:
                data = bytes(await stream.receive_some(RECEIVE))
                conn.receive_data(data)
                if exchange is not None:
                    exchange.bytes_down += len(data)
            if scope.cancelled_caught:
                raise _Failed(refusal.upstream_failed(504, "idle-timeout", f"nothing arrived for {idle_s} s"))
        return event

    async def _send_request(self, conn: h11.Connection, first: h11.Request, exchange: Exchange) -> None:
        """The request head and body, app → upstream (bad framing from the app is a 400)."""
        data = self.upstream_conn.send(first) or b""
        if conn.client_is_waiting_for_100_continue:
            await self.app.send_all(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
        while True:
            try:
                event = await self._next(conn, self.app, None)
            except h11.RemoteProtocolError as exc:
                raise _Failed(refusal.bad_request("bad-body-framing", str(exc))) from exc
            if isinstance(event, h11.Data):
                data += self.upstream_conn.send(h11.Data(data=bytes(event.data))) or b""
            elif isinstance(event, h11.EndOfMessage):
                data += self.upstream_conn.send(h11.EndOfMessage()) or b""
            else:
                raise _Failed(refusal.bad_request("bad-body-framing", "the client closed inside its request"))
            await self.upstream.send_all(data)
            exchange.bytes_up += len(data)
            data = b""
            if isinstance(event, h11.EndOfMessage):
                return

    async def _relay_response(self, conn: h11.Connection, exchange: Exchange, forms: tuple[bytes, ...]) -> None:
        """The response, upstream → app, re-framed by h11, every form of the secret redacted; 1xx dropped."""
        redactor = Redactor(forms)
        while True:
            try:
                event = await self._next(self.upstream_conn, self.upstream, exchange)
            except h11.RemoteProtocolError as exc:
                if exchange.status:
                    raise
                raise _Failed(refusal.upstream_failed(502, "bad-upstream-response", str(exc))) from exc
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                exchange.status = event.status_code
                out = conn.send(self._response_head(event, forms)) or b""
            elif isinstance(event, h11.Data):
                out = conn.send(h11.Data(data=redactor.feed(bytes(event.data)))) or b""
            elif isinstance(event, h11.EndOfMessage):
                rest = redactor.rest()
                out = (conn.send(h11.Data(data=rest)) or b"") if rest else b""
                await self.app.send_all(out + (conn.send(h11.EndOfMessage()) or b""))
                self._next_cycle()
                return
            else:
                raise _Failed(refusal.upstream_failed(502, "bad-upstream-response", "upstream closed mid-response"))
            await self.app.send_all(out)

    def _response_head(self, event: h11.Response, forms: tuple[bytes, ...]) -> h11.Response:
        headers = [(name, redact(bytes(value), forms)) for name, value in downstream_headers(event.headers)]
        if _upstream_closes(event):
            headers.append((b"connection", b"close"))  # the app's connection ends with the upstream's
        return h11.Response(status_code=event.status_code, reason=event.reason or phrase(event.status_code),
                            headers=headers)

    def _next_cycle(self) -> None:
        if self.upstream_conn.our_state is h11.DONE and self.upstream_conn.their_state is h11.DONE:
            self.upstream_conn.start_next_cycle()


def _upstream_closes(response: h11.Response) -> bool:
    tokens = {token.strip().lower() for name, value in response.headers if name.lower() == b"connection"
              for token in bytes(value).split(b",")}
    return b"close" in tokens or response.http_version != b"1.1"


def _misdirected(request: h11.Request, target: Target) -> ProxyRefusal | None:
    """A request on a terminated tunnel is HTTP/1.x (400) and names the CONNECT host, in origin form (421)."""
    if request.http_version not in (b"1.0", b"1.1"):
        return refusal.bad_request("not-http1", f"HTTP/{request.http_version.decode()} on a terminated tunnel "
                                   "(the door offers only http/1.1 in ALPN)")
    if not request.target.startswith(b"/"):
        return refusal.misdirected(f"the request target is not a path on {target.host}")
    hosts = [bytes(value).lower() for name, value in request.headers if name.lower() == b"host"]
    expected = {str(target.host).encode(), f"{target.host}:{target.port}".encode()}
    if target.port != 443:
        expected.discard(str(target.host).encode())
    if len(hosts) != 1 or hosts[0] not in expected:
        shown = hosts[0].decode("ascii", "replace")[:100] if hosts else "none"
        return refusal.misdirected(f"Host {shown} differs from the CONNECT host {target.host}:{target.port}")
    return None


def _why(exc: BaseException) -> str:
    cause = exc.__cause__ if isinstance(exc.__cause__, ssl.SSLError) else exc
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"the upstream's certificate is not trusted ({cause.verify_message})"
    if isinstance(cause, ssl.SSLError):
        return cause.reason or type(cause).__name__
    return type(exc).__name__
