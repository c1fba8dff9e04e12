"""A small corporate upstream proxy for the tests: CONNECT only, run in the wan namespace, recording what it saw.

It answers 407 when it wants a credential and was not given that one, 403 for a target it is told to refuse,
502 when it cannot reach the target; otherwise 200 and it relays bytes both ways. A name is resolved from the
test zone (the proxy's own resolver); the door's `resolve: "door"` mode asks for an address instead.
"""

from __future__ import annotations

import base64
import socket
from dataclasses import dataclass, field

import h11
import trio

from . import netns
from .dns import Zone

MAX = 64 * 1024


@dataclass
class ProxyLog:
    """What the proxy saw: connections, CONNECT targets and Proxy-Authorization values, bytes relayed up."""

    connections: int = 0
    targets: list[str] = field(default_factory=list)
    credentials: list[str | None] = field(default_factory=list)
    bytes_up: int = 0


@dataclass
class TestUpstreamProxy:
    __test__ = False

    ns: str
    zone: Zone
    credential: bytes | None = None  # what it wants, as user:password
    refuse: frozenset[str] = frozenset()
    log: ProxyLog = field(default_factory=ProxyLog)

    async def serve(self, listener: trio.SocketListener) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._guarded, stream)

    async def _guarded(self, stream: trio.SocketStream) -> None:
        self.log.connections += 1
        try:
            async with stream:
                await self._one(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, OSError):
            pass

    async def _head(self, stream: trio.SocketStream) -> tuple[h11.Connection, h11.Request] | None:
        conn = h11.Connection(h11.SERVER)
        while (event := conn.next_event()) is h11.NEED_DATA:
            data = await stream.receive_some(MAX)
            if not data:
                return None
            conn.receive_data(data)
        return (conn, event) if isinstance(event, h11.Request) else None

    async def _one(self, stream: trio.SocketStream) -> None:
        found = await self._head(stream)
        if found is None:
            return
        conn, request = found
        target = request.target.decode()
        given = dict(request.headers).get(b"proxy-authorization")
        self.log.targets.append(target)
        self.log.credentials.append(given.decode() if given is not None else None)
        wanted = None if self.credential is None else b"Basic " + base64.b64encode(self.credential)
        if request.method != b"CONNECT" or (wanted is not None and given != wanted) or target in self.refuse:
            status = 405 if request.method != b"CONNECT" else 407 if wanted is not None and given != wanted else 403
            await stream.send_all(conn.send(h11.Response(status_code=status, headers=[(b"content-length", b"0")]))
                                  or b"")
            return
        upstream = await self._dial(target)
        if upstream is None:
            await stream.send_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            return
        async with upstream:
            await stream.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._copy, stream, upstream, True)
                nursery.start_soon(self._copy, upstream, stream, False)

    async def _dial(self, target: str) -> trio.SocketStream | None:
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        if not host.replace(".", "").isdigit() and ":" not in host:
            answers = self.zone.static.get((host, "A"), [])
            if not answers:
                return None
            host = answers[0]
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = trio.socket.from_stdlib_socket(netns.socket_in(self.ns, family))
        try:
            await sock.connect((host, int(port)))
        except OSError:
            sock.close()
            return None
        return trio.SocketStream(sock)

    async def _copy(self, source: trio.SocketStream, sink: trio.SocketStream, up: bool) -> None:
        try:
            while data := await source.receive_some(MAX):
                if up:
                    self.log.bytes_up += len(data)
                await sink.send_all(data)
            await sink.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
