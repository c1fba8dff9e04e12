"""Dialling through a corporate upstream proxy (`doors.net.upstream_proxy`): every check the door makes stays,
then it opens a CONNECT tunnel at the upstream proxy instead of connecting to the destination itself.

The proxy's address is the only one dialled. With `resolve: "door"` (the default) the door has resolved and
checked the destination and asks the proxy for exactly a checked address (`CONNECT 203.0.113.80:443`), so the
address rules hold as on a direct dial; with `resolve: "proxy"` it asks for the name and the proxy resolves it
(the address rule is then the proxy's: `check` says so). A credential (`secret`, released by the keys door for
the proxy's host) goes in `Proxy-Authorization: Basic` on that CONNECT only: never logged, never to the app.
The CONNECT exchange is h11's; its bytes and the reply are the door's alone.
"""

from __future__ import annotations

import base64
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import h11
import trio

from doors.net import _refusal as refusal
from doors.net._addr import AddressPolicy, IPAddress
from doors.net._host import Host, HostError, parse_authority
from doors.net._refusal import ProxyRefusal

ROW = refusal.ROW_UPSTREAM_PROXY
MAX_REPLY_BYTES = 16 * 1024
# Statuses after which the next checked address of the destination is worth a try (the proxy could not reach
# that one); any other refusal (407, 403, ...) is the proxy's answer for the request.
_TRY_NEXT = frozenset({502, 503, 504})
# Anywhere the proxy may be, except what no row ever makes a destination (loopback, link-local, this host, ...).
_ANYWHERE = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))

ProxyCredentialSource = Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class UpstreamProxy:
    """The row: where the proxy is, who resolves, and the credential's name (its value comes from keys)."""

    host: Host
    port: int
    resolve_by_proxy: bool = False
    secret: str | None = None

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"


def parse_upstream_proxy(row: object) -> UpstreamProxy | None:
    """The `upstream_proxy` contract row, or None when there is none; ValueError naming the row otherwise."""
    if row is None:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("address"), str):
        raise ValueError(f"{ROW} must be {{\"address\": \"host:port\", ...}}")
    try:
        host, port = parse_authority(row["address"])
    except HostError as exc:
        raise ValueError(f"{ROW}.address: {exc.detail}") from exc
    if row.get("resolve", "door") not in ("door", "proxy"):
        raise ValueError(f"{ROW}.resolve must be \"door\" or \"proxy\"")
    secret = row.get("secret")
    return UpstreamProxy(host, port, row.get("resolve") == "proxy", secret if isinstance(secret, str) else None)


def connect_head(authority: str, credential: bytes | None) -> tuple[h11.Connection, bytes]:
    """The CONNECT request for `authority` (with Proxy-Authorization when a credential is given). Pure."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_REPLY_BYTES)
    headers = [(b"host", authority.encode("ascii"))]
    if credential is not None:
        headers.append((b"proxy-authorization", b"Basic " + base64.b64encode(credential)))
    data = conn.send(h11.Request(method=b"CONNECT", target=authority.encode("ascii"), headers=headers)) or b""
    return conn, data + (conn.send(h11.EndOfMessage()) or b"")


def read_reply(conn: h11.Connection, data: bytes) -> int | str | None:
    """Feed `data`; the proxy's status once its reply head is whole, None for more, or why it cannot be read."""
    if not data:
        return "the upstream proxy closed before its reply"
    conn.receive_data(data)
    try:
        while (event := conn.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Response):
                if 200 <= event.status_code < 300 and conn.trailing_data[0]:
                    return "the upstream proxy sent bytes before the client spoke"
                return event.status_code
    except h11.RemoteProtocolError as exc:
        return f"the upstream proxy's reply is not HTTP/1.1: {exc}"
    return None


@dataclass(frozen=True)
class Via:
    """What the door needs to dial through the upstream proxy: the row, and where its credential comes from."""

    proxy: UpstreamProxy
    credential: ProxyCredentialSource | None = None


def asked_authority(host: Host, port: int, address: IPAddress | None) -> str:
    """What the door asks the proxy for: the checked address, or (resolve: proxy) the name."""
    if address is None:
        return f"{host}:{port}"
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


async def proxy_addresses(via: Via, resolve: Callable[[str], Awaitable[list[IPAddress] | ProxyRefusal]],
                          policy: AddressPolicy, local: Callable[[IPAddress], bool]) -> list[IPAddress] | ProxyRefusal:
    """The proxy's checked addresses: never loopback, link-local, this host or the door's own listeners."""
    proxy = via.proxy
    answers = [proxy.host.ip] if proxy.host.ip is not None else await resolve(proxy.host.name)
    if isinstance(answers, ProxyRefusal):
        return answers
    for ip in answers:
        why = policy.refusal(ip, proxy.port, _ANYWHERE) or ("own-host" if local(ip) else None)
        if why is not None:
            return refusal.not_public(f"upstream-proxy-{why}", f"the upstream proxy {proxy.authority} resolved "
                                      f"to {ip} ({why}), which the door never dials")
    return answers


async def _exchange(stream: trio.SocketStream, authority: str, credential: bytes | None) -> int | str:
    conn, head = connect_head(authority, credential)
    await stream.send_all(head)
    while True:
        data = await stream.receive_some(MAX_REPLY_BYTES)
        status = read_reply(conn, bytes(data))
        if status is not None:
            return status


async def open_via(via: Via, proxy_address: IPAddress, authority: str) -> trio.SocketStream | ProxyRefusal:
    """One tunnel at the proxy for `authority`: the stream after its 2xx, or the refusal (the proxy's status)."""
    family = socket.AF_INET6 if proxy_address.version == 6 else socket.AF_INET
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((str(proxy_address), via.proxy.port))
    except BaseException:
        sock.close()
        raise
    stream = trio.SocketStream(sock)
    try:
        credential = await via.credential() if via.credential is not None else None
        status = await _exchange(stream, authority, credential)
    except BaseException:
        await stream.aclose()
        raise
    if isinstance(status, int) and 200 <= status < 300:
        return stream
    await stream.aclose()
    detail = status if isinstance(status, str) else f"the upstream proxy {via.proxy.authority} answered {status} " \
        f"to CONNECT {authority}"
    code = status if isinstance(status, int) and status in _TRY_NEXT else 502
    return refusal.upstream_proxy_failed(code, detail)


def try_next(verdict: ProxyRefusal) -> bool:
    """Whether the next checked address is worth a try after this refusal from the proxy."""
    return verdict.refusal.status in _TRY_NEXT and verdict.reason == "upstream-proxy-refused"
