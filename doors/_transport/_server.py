"""serve_mtls: the door side of the transport, over Unix sockets and TCP with the same code."""

from __future__ import annotations

import datetime as dt
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import trio

from doors._http import Limits, Request, Response, Router, serve_http
from doors._transport._alerts import describe_local
from doors._transport._identity import Admission, admit_client, refusal_event, refusal_response
from doors._transport._stream import TlsFailure, TlsStream
from doors._transport._tls import TlsContext
from pki.edges import EdgePolicy
from pki.spiffe import SessionIdentity

OnEvent = Callable[[dict[str, Any]], None]
HANDSHAKE_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 256
LINGER_S = 1.0


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def listener_from_fd(fd: int) -> trio.SocketListener:
    """A trio listener for an inherited listening socket (Unix or TCP), like systemd socket activation."""
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))


def unix_listener(path: str, backlog: int = 128) -> trio.SocketListener:
    """Bind and listen on a Unix socket at `path` (tests; the launcher binds the real ones)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.listen(backlog)
    sock.setblocking(False)
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))


def peer_of(transport: trio.abc.Stream) -> dict[str, Any]:
    """Who is on the other end, as the kernel says: pid/uid/gid on a Unix socket, address on TCP."""
    sock = getattr(transport, "socket", None)
    if sock is None:
        return {}
    if sock.family == socket.AF_UNIX:
        pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return {"peer_pid": pid, "peer_uid": uid, "peer_gid": gid}
    host, port = sock.getpeername()[:2]
    return {"peer_addr": f"{host}:{port}"}


class _Door:
    """One door's transport state: who it is, whom it admits, and where its events go."""

    def __init__(self, server_ctx: TlsContext, identity: SessionIdentity, edge_policy: EdgePolicy,
                 router: Router, on_event: OnEvent, limits: Limits, handshake_timeout_s: float,
                 max_connections: int, clock: Callable[[], dt.datetime]) -> None:
        self.ctx = server_ctx
        self.identity = identity
        self.edge_policy = edge_policy
        self.router = router
        self.on_event = on_event
        self.limits = limits
        self.handshake_timeout_s = handshake_timeout_s
        self.slots = trio.CapacityLimiter(max_connections)
        # One client (a uid, as the kernel says) may hold at most half the slots: the app cannot starve the
        # shell out of the net door, nor any edge client the others.
        self.per_peer_max = max(1, max_connections // 2)
        self.per_peer: dict[int, int] = {}
        self.clock = clock

    async def connection(self, transport: trio.SocketStream) -> None:
        """Serve one accepted connection; refuse at once when the door, or this client's share, is full."""
        peer = peer_of(transport)
        uid = peer.get("peer_uid")
        if uid is not None and self.per_peer.get(uid, 0) >= self.per_peer_max:
            reason = f"this client (uid {uid}) holds {self.per_peer_max} connections, its share of the door"
            self.on_event(refusal_event(self.identity, "capacity", reason, None, peer))
            await transport.aclose()
            return
        try:
            self.slots.acquire_nowait()
        except trio.WouldBlock:
            self.on_event(refusal_event(self.identity, "capacity", "the door has too many connections", None, peer))
            await transport.aclose()
            return
        if uid is not None:
            self.per_peer[uid] = self.per_peer.get(uid, 0) + 1
        try:
            await self._serve(transport, peer)
        finally:
            self.slots.release()
            if uid is not None:
                self.per_peer[uid] -= 1
                if not self.per_peer[uid]:
                    del self.per_peer[uid]

    async def _serve(self, transport: trio.SocketStream, peer: dict[str, Any]) -> None:
        if self.limits.send_buffer_bytes is not None:
            transport.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.send_buffer_bytes)
        tls = TlsStream.wrap(transport, self.ctx, server_side=True)
        try:
            admission = await self._handshake(tls, peer)
            if admission is not None:
                await self._http(tls, admission, peer)
        except (TlsFailure, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # the client left mid-conversation: nothing to refuse, nothing to answer
        finally:
            with trio.CancelScope(shield=True):
                await tls.aclose()

    async def _handshake(self, tls: TlsStream, peer: dict[str, Any]) -> Admission | None:
        try:
            with trio.fail_after(self.handshake_timeout_s):
                await tls.do_handshake()
        except TlsFailure as exc:
            reason = describe_local(exc.ssl_error, str(exc))
            self.on_event(refusal_event(self.identity, "tls", reason, None, peer))
            await _linger(tls.transport)
            return None
        except trio.TooSlowError:
            reason = "the handshake did not finish in time"
            self.on_event(refusal_event(self.identity, "tls", reason, None, peer))
            return None
        admission = admit_client(tls.peer_der(), door=self.identity, edge_policy=self.edge_policy,
                                 now=self.clock())
        if not admission.ok:
            self.on_event(refusal_event(self.identity, admission.stage, admission.reason,
                                        admission.client, peer))
        return admission

    async def _http(self, tls: TlsStream, admission: Admission, peer: dict[str, Any]) -> None:
        client = admission.client
        if not admission.ok:
            refusal = refusal_response(admission, self.identity.role)

            def gate(request: Request) -> Response:
                return refusal

            # A refused client gets its answer on its first request; it may not idle on a slot meanwhile.
            limits = replace(self.limits, idle_timeout_s=min(self.limits.idle_timeout_s,
                                                             self.limits.head_timeout_s))
            await serve_http(tls, self.router, limits, gate=gate)
            return

        def on_exchange(request: Request, status: int) -> None:
            self.on_event({"kind": "http.request", "door": self.identity.role,
                           "client_role": client.role if client else None,
                           "method": request.method, "path": request.path, "status": status, **peer})

        def on_cut(request: Request, sent: int) -> None:
            self.on_event({"kind": "http.cut", "door": self.identity.role,
                           "client_role": client.role if client else None, "method": request.method,
                           "path": request.path, "row": "http.send_timeout_s", "sent": sent,
                           "reason": f"the client did not read the response for {self.limits.send_timeout_s} s",
                           **peer})

        await serve_http(tls, self.router, self.limits, on_exchange=on_exchange, on_cut=on_cut,
                         peer_role=client.role if client else None, peer_id=client.uri() if client else None)


async def _linger(transport: trio.abc.Stream) -> None:
    """After an alert, read until the client closes (briefly), so the close does not reset the alert."""
    with trio.move_on_after(LINGER_S):
        try:
            while await transport.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass


async def serve_mtls(
    listeners: trio.SocketListener | Sequence[trio.SocketListener],
    server_ctx: TlsContext,
    identity: SessionIdentity,
    edge_policy: EdgePolicy,
    router: Router,
    on_event: OnEvent,
    *,
    limits: Limits | None = None,
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
    clock: Callable[[], dt.datetime] = utc_now,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `router` on `listeners` over mutual TLS 1.3, admitting only SVID-holding, edge-listed clients.

    A refused client gets a TLS alert (certificate refused by OpenSSL) or a 403 in the error shape on
    its first request (SVID or edge refused by us); `on_event` gets one event per refusal and per request.
    """
    door = _Door(server_ctx, identity, edge_policy, router, on_event, limits or Limits(),
                 handshake_timeout_s, max_connections, clock)
    group = [listeners] if isinstance(listeners, trio.SocketListener) else list(listeners)
    await trio.serve_listeners(door.connection, group, task_status=task_status)
