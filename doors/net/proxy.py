"""The egress proxy: CONNECT tunnels and absolute-form plain HTTP on listeners handed over by fd.

Each request, in order: framing → host and allowlist → the role's tunnel limit → `net.open` queued (or 503)
→ resolve once and check every answer → dial a checked address → for CONNECT, 200 and then the ClientHello →
relay. Each check is a pure core's verdict and a refusal ends the request there. The door acts (resolves,
dials) only once `net.open` is queued; the closing `net.request` event, with the verdict and the bytes
relayed, is reported when the request ends (`proxy.finish`, in a `finally`).
"""

from __future__ import annotations

import errno
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import trio

from doors._audit_queue import AuditBackpressure
from doors._secret_match import SecretMatcher
from doors.net import _refusal as refusal
from doors.net._addr import AddressPolicy
from doors.net._audit import AuditSink, Exchange
from doors.net._clienthello import DEFAULT_MAX_HELLO
from doors.net._command_label import command_label
from doors.net._egress_tls import CredentialSource, EgressConfig
from doors.net._forward import forward
from doors.net._framing import FramingError, start_request
from doors.net._policy import Allowlist
from doors.net._refusal import ProxyRefusal
from doors.net._resolve import Resolver, SystemResolver
from doors.net._respond import send_refusal
from doors.net._tunnel import tunnel
from doors.net._via_proxy import Via
from doors.net._wildcard import DEFAULT_MAX_WILDCARD_NAMES, WildcardNames

RECEIVE = 64 * 1024
SHELL_ROLE = "shell"  # whose requests may name the command they come from
ACCEPT_PAUSE_S = 0.1
_ACCEPT_PAUSE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


@dataclass(frozen=True)
class ProxyConfig:
    """What the proxy holds: the allowlist, the address policy and the limits (per role)."""

    allowlist: Allowlist
    addresses: AddressPolicy = field(default_factory=AddressPolicy)
    resolve_timeout_s: float = 5.0
    connect_timeout_s: float = 10.0
    idle_timeout_s: float = 300.0
    head_timeout_s: float = 30.0
    max_tunnels: int = 64
    max_connections: int = 256
    max_wildcard_names: int = DEFAULT_MAX_WILDCARD_NAMES
    max_hello: int = DEFAULT_MAX_HELLO
    retry_after_s: int = 1
    via: Via | None = None  # the upstream proxy (doors.net.upstream_proxy): the only address dialled
    kept_secrets: SecretMatcher | None = None  # the keys door's fingerprint: plain HTTP carrying one is refused
    egress: EgressConfig | None = None  # hosts with a bound credential: their tunnels are terminated


@dataclass(frozen=True)
class ProxyStatistics:
    """Open tunnels and requests in flight per role, and totals since start."""

    open_by_role: MappingProxyType[str, int]
    requests: int
    refused: int


class Proxy:
    """Serves proxy listeners, one role per listener."""

    def __init__(self, config: ProxyConfig, audit: AuditSink, resolver: Resolver | None = None, *,
                 report: AuditSink | None = None, credentials: CredentialSource | None = None) -> None:
        """`audit` queues the event of an act or raises AuditBackpressure; `report` (default: `audit`) an
        event about what already happened, never raising; `credentials` releases a bound secret (keys door)."""
        self.config = config
        self.credentials = credentials
        self.resolver: Resolver = resolver or SystemResolver()
        self._audit = audit
        self._report = report or audit
        self._open: Counter[str] = Counter()
        self.wildcard_names = WildcardNames(config.max_wildcard_names)
        self._requests = 0
        self._refused = 0

    def statistics(self) -> ProxyStatistics:
        """A frozen snapshot of the counters."""
        open_now = MappingProxyType({role: n for role, n in self._open.items() if n})
        return ProxyStatistics(open_now, self._requests, self._refused)

    async def serve(self, listener: trio.SocketListener, role: str,
                    *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept on `listener` forever; every connection on it speaks for `role`.

        At most `max_connections` are served at once; more wait in the kernel's backlog. Running out
        of fds pauses accepting instead of ending the door.
        """
        slots = trio.Semaphore(self.config.max_connections)
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                await slots.acquire()
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    slots.release()
                    if exc.errno not in _ACCEPT_PAUSE:
                        raise
                    await trio.sleep(ACCEPT_PAUSE_S)
                    continue
                nursery.start_soon(self._handle_in_slot, stream, role, slots)

    async def _handle_in_slot(self, stream: trio.abc.Stream, role: str, slots: trio.Semaphore) -> None:
        try:
            await self.handle(stream, role)
        finally:
            slots.release()

    async def handle(self, stream: trio.abc.Stream, role: str) -> None:
        """One client connection: requests in order (keep-alive, pipelining), or one tunnel."""
        async with stream:
            try:
                await self._requests_on(stream, role)
            except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
                return  # the client went away; its request's audit event is already out

    async def _requests_on(self, stream: trio.abc.Stream, role: str) -> None:
        buf = b""
        while True:
            parsed, buf = await self._read_request(stream, buf)
            if parsed is None:
                return
            if isinstance(parsed, FramingError):
                self._refuse_unparsed(role, parsed)
                await send_refusal(stream, None, refusal.bad_request(parsed.reason, parsed.detail))
                return
            conn, request = parsed
            if request.method == b"CONNECT":
                await tunnel(self, stream, conn, request, role)
                return
            leftover = await forward(self, stream, conn, request, role)
            if leftover is None:
                return
            buf = leftover

    async def _read_request(self, stream: trio.abc.Stream, buf: bytes) -> tuple[Any, bytes]:
        """(h11 state + request | FramingError | None when the client left or stalled, bytes so far)."""
        with trio.move_on_after(self.config.head_timeout_s):
            while True:
                parsed = start_request(buf)
                if parsed is not None:
                    return parsed, buf
                try:
                    data = await stream.receive_some(RECEIVE)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return None, buf
                if not data:
                    return None, buf
                buf += data
        return None, buf

    def exchange(self, role: str, method: bytes, requested: bytes,
                 headers: Iterable[tuple[bytes, bytes]] = ()) -> Exchange:
        """A fresh audit record for one request (with the shell command it names, for the shell's requests)."""
        self._requests += 1
        return Exchange(role=role, started=trio.current_time(), method=method.decode("ascii", "replace"),
                        requested=requested.decode("utf-8", "replace"),
                        command=command_label(headers) if role == SHELL_ROLE else "")

    def announce(self, exchange: Exchange, row: str) -> ProxyRefusal | None:
        """Queue `net.open` before the door resolves and dials; the 503 to answer when it cannot be queued."""
        try:
            self._audit(exchange.open_event(row))
        except AuditBackpressure as refused:
            return refusal.audit_backpressure(refused.refusal)
        return None

    def finish(self, exchange: Exchange) -> None:
        """Report the closing `net.request` event of this request."""
        if exchange.decision != "allow":
            self._refused += 1
        self._report(exchange.event(trio.current_time()))

    def _refuse_unparsed(self, role: str, error: FramingError) -> None:
        exchange = self.exchange(role, b"", b"")
        exchange.refuse(400, error.reason, refusal.ROW_FRAMING)
        self.finish(exchange)

    def try_open(self, role: str) -> bool:
        """Take one of the role's tunnel slots; False when all are in use."""
        if self._open[role] >= self.config.max_tunnels:
            return False
        self._open[role] += 1
        return True

    def close_one(self, role: str) -> None:
        """Give a slot back."""
        self._open[role] -= 1
