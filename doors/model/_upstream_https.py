"""The upstream over HTTPS: the provider's API (or an organisation's gateway in front of it).

One connection per call: resolve the one upstream host, keep only addresses the door may dial (public ones, or
those inside `doors.model.internal_ranges`; loopback, link-local and the door's own listeners never), dial one,
verify TLS against the system store (or the manifest's CA bundle), then HTTP/1.1 on h11. The response body is
read as it arrives. The door's Landlock TCP rule admits only the upstream's port (and DNS).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import h11
import trio

from doors._refusal import DoorRefused, Refusal
from doors.model._config import IPNetwork, ModelConfig
from doors.model._upstream import Headers, UpstreamRequest, UpstreamResponse
from doors.net import AddressPolicy, ResolveError, Resolver, SystemResolver

RECEIVE = 64 * 1024
RESOLVE_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 10.0
HEAD_TIMEOUT_S = 600.0  # a non-streaming call's answer comes only when the model is done
MAX_HEAD_BYTES = 64 * 1024
ROW_RANGES = "doors.model.internal_ranges"


def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """Verified TLS (1.2 or later) against the system store, or against `ca_bundle` alone when it is given."""
    context = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    return context


class HttpsUpstream:
    """`Upstream` over HTTPS to the one host of `doors.model.upstream`."""

    def __init__(self, config: ModelConfig, resolver: Resolver | None = None,
                 test_internet: tuple[IPNetwork, ...] = ()) -> None:
        """`test_internet` is for tests and the bench only (their upstream lives on a private address)."""
        self.name = config.upstream.name
        self.host, self.port = config.upstream.host, config.upstream.port
        self.resolver: Resolver = resolver or SystemResolver()
        self.context = tls_context(config.ca_bundle)
        self.addresses = AddressPolicy((*config.internal_ranges, *test_internet))

    async def _dial(self) -> trio.SocketStream:
        try:
            with trio.fail_after(RESOLVE_TIMEOUT_S):
                answers = await self.resolver.resolve(self.host)
        except (ResolveError, trio.TooSlowError) as exc:
            raise OSError(f"{self.host} did not resolve ({getattr(exc, 'reason', 'timeout')})") from exc
        refused = {str(ip): reason for ip in answers if (reason := self.addresses.refusal(ip, self.port))}
        allowed = [ip for ip in answers if str(ip) not in refused]
        if not allowed:
            raise DoorRefused(Refusal(502, ROW_RANGES, "model",
                                      f"{self.host} resolves only to addresses the door does not dial: {refused}",
                                      "add the gateway's range to doors.model.internal_ranges (never loopback "
                                      "or link-local)"))
        last: OSError | None = None
        for ip in allowed:
            try:
                with trio.fail_after(CONNECT_TIMEOUT_S):
                    return await trio.open_tcp_stream(str(ip), self.port)
            except (OSError, trio.TooSlowError) as exc:
                last = exc if isinstance(exc, OSError) else TimeoutError(f"connect to {ip} timed out")
        assert last is not None
        raise last

    async def exchange(self, request: UpstreamRequest) -> UpstreamResponse:
        """Send `request`; return once the status and headers are known. OSError when unreachable."""
        tcp = await self._dial()
        tls = trio.SSLStream(tcp, self.context, server_hostname=self.host, https_compatible=True)
        try:
            with trio.fail_after(CONNECT_TIMEOUT_S):
                await tls.do_handshake()
            conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
            headers = [(b"host", self._authority()), *request.headers,
                       (b"content-length", str(len(request.body)).encode()), (b"accept-encoding", b"identity"),
                       (b"connection", b"close")]
            out = conn.send(h11.Request(method=request.method, target=request.path, headers=headers)) or b""
            out += (conn.send(h11.Data(data=request.body)) or b"") if request.body else b""
            await tls.send_all(out + (conn.send(h11.EndOfMessage()) or b""))
            del headers, out  # the released key goes with this request
            with trio.fail_after(HEAD_TIMEOUT_S):
                head = await _next(conn, tls)
            if not isinstance(head, h11.Response):
                raise OSError("the upstream closed the connection before answering")
        except (trio.BrokenResourceError, trio.TooSlowError, ssl.SSLError, h11.ProtocolError) as exc:
            await trio.aclose_forcefully(tls)
            raise OSError(f"the upstream failed: {_why(exc)}") from exc
        except BaseException:
            await trio.aclose_forcefully(tls)
            raise
        response_headers: Headers = tuple((bytes(k), bytes(v)) for k, v in head.headers)
        return UpstreamResponse(head.status_code, response_headers, _body(conn, tls), closers=[tls])

    def _authority(self) -> bytes:
        return (self.host if self.port == 443 else f"{self.host}:{self.port}").encode()

    async def aclose_response(self, response: UpstreamResponse) -> None:
        """Close the connection the response came on (read to its end or not)."""
        for closer in response.closers:
            if isinstance(closer, trio.abc.AsyncResource):
                await trio.aclose_forcefully(closer)


def _why(exc: BaseException) -> str:
    """What failed, in words that hold nothing sent: a TLS failure names itself (trio wraps it)."""
    cause = exc.__cause__ if isinstance(exc.__cause__, ssl.SSLError) else exc
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"TLS: the upstream's certificate is not trusted ({cause.verify_message})"
    if isinstance(cause, ssl.SSLError):
        return f"TLS: {cause.reason or type(cause).__name__}"
    return type(exc).__name__


async def _next(conn: h11.Connection, tls: trio.SSLStream[trio.SocketStream]) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(bytes(await tls.receive_some(RECEIVE)))


async def _body(conn: h11.Connection, tls: trio.SSLStream[trio.SocketStream]) -> AsyncIterator[bytes]:
    """The response body's pieces; OSError when the upstream breaks off before its end."""
    while True:
        try:
            event = await _next(conn, tls)
        except (trio.BrokenResourceError, ssl.SSLError, h11.ProtocolError) as exc:
            raise OSError(f"the upstream broke off: {type(exc).__name__}") from exc
        if isinstance(event, h11.Data):
            yield bytes(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return
        else:
            raise OSError("the upstream closed the connection before the end of its answer")
