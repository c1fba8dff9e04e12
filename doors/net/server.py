"""Build the net door from its contract: proxy listeners by fd, rows, audit to the status fd, and on mTLS
the hello plus the same proxy for doors on its edges (their role is their SVID's)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

import trio

from doors._contract import DoorContract
from doors._door import DoorRuntime, run_reporting, serve_door
from doors._http import Request, TakeoverRoute
from doors._secret_match import SecretFingerprint, SecretMatcher
from doors._status import StatusSender
from doors._transport import AsyncDoorClient, Dial, TlsFailure, listener_from_fd
from doors.net._addr import AddressPolicy, IPAddress, IPNetwork
from doors.net._egress_tls import CredentialSource, EgressConfig, server_contexts, upstream_context
from doors.net._inject import Injection
from doors.net._policy import Allowlist
from doors.net._resolve import Resolver
from doors.net._via_proxy import Via, parse_upstream_proxy
from doors.net.proxy import Proxy, ProxyConfig
from pki.vocabulary import PROXY_LISTENER_PREFIX

# Requests a door on an edge to net may send over mutual TLS: CONNECT and absolute-form plain HTTP.
PROXY_METHODS = ("CONNECT", "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
# Rows of contract.rows this door holds (GET /v0/hello reports them as held by the net door).
HELD_ROWS = frozenset({"allow", "internal", "max_wildcard_names", "upstream_proxy", "max_tunnels", "max_connections",
                       "connect_timeout_s", "idle_timeout_s", "resolve_timeout_s", "inject", "ca_bundle"})
EGRESS_FD_ROW = "egress_fd"  # the launcher's: the memfd of the bound hosts' egress leaves
KEYS_SOCKET_ROW = "keys_socket"  # the launcher's: where bound credentials are released (edge net→keys)
_LIMIT_ROWS = ("max_tunnels", "max_connections", "max_wildcard_names", "connect_timeout_s", "idle_timeout_s",
               "resolve_timeout_s")


def config_from_rows(rows: Mapping[str, Any], own_listeners: frozenset[tuple[IPAddress, int]],
                     test_internet: tuple[IPNetwork, ...] = (), kept_secrets: Mapping[str, Any] | None = None,
                     ) -> ProxyConfig:
    """The proxy's config from the contract rows (`allow` is the manifest's doors.net.allow) and the keys door's
    fingerprint `kept_secrets` (the contract's, its wire form).

    `test_internet` is for tests and the bench only; no row sets it.
    """
    allow = rows.get("allow", {})
    if not isinstance(allow, Mapping):
        raise ValueError("doors.net.allow must map each role to a list of host:port entries")
    limits: dict[str, Any] = {}
    for name in _LIMIT_ROWS:
        value = rows.get(name)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"doors.net.{name} must be a positive integer, not {value!r}")
            limits[name] = value
    kept = SecretMatcher(SecretFingerprint.from_json(kept_secrets)) if kept_secrets is not None else None
    internal = rows.get("internal", {})
    if not isinstance(internal, Mapping):
        raise ValueError("doors.net.internal must map each role to {host:port: [ranges]}")
    upstream = parse_upstream_proxy(rows.get("upstream_proxy"))
    return ProxyConfig(allowlist=Allowlist.from_rows(allow, internal),
                       addresses=AddressPolicy(test_internet, own_listeners), kept_secrets=kept,
                       via=Via(upstream) if upstream is not None else None, egress=egress_from_rows(rows), **limits)


def egress_from_rows(rows: Mapping[str, Any]) -> EgressConfig | None:
    """The terminating path's config when `doors.net.inject` binds hosts: rules, leaves (from their memfd), trust."""
    inject = rows.get("inject") or []
    if not inject:
        return None
    fd = rows.get(EGRESS_FD_ROW)
    if not isinstance(fd, int):
        raise ValueError("doors.net.inject binds hosts but the launcher passed no egress leaves")
    ca_bundle = rows.get("ca_bundle")
    return EgressConfig(Injection.from_rows(inject), server_contexts(fd),
                        upstream_context(ca_bundle if isinstance(ca_bundle, str) else None))


class KeysCredentials:
    """Bound credentials, released by the keys door for one request at a time over one kept connection."""

    def __init__(self, runtime: DoorRuntime, keys_socket: str) -> None:
        contract = runtime.contract
        self._client = AsyncDoorClient(Dial("keys", keys_socket, runtime.client_ctx, contract.trust_domain,
                                            contract.session_id, contract.role))
        self._requester = runtime.identity.uri()
        self._lock = trio.Lock()

    async def __call__(self, name: str, host: str) -> bytes:
        from doors.keys.client import release  # here: an exec'd net door without bindings imports no keys code

        async with self._lock:
            return await release(self._client, self._requester, name, host)


def credentials_of(runtime: DoorRuntime, rows: Mapping[str, Any]) -> CredentialSource | None:
    """Where bound credentials come from: the keys door, when the launcher named its socket (edge net→keys)."""
    keys_socket = rows.get(KEYS_SOCKET_ROW)
    return KeysCredentials(runtime, keys_socket) if isinstance(keys_socket, str) else None


def with_proxy_credential(config: ProxyConfig, credentials: CredentialSource | None) -> ProxyConfig:
    """`config` with the upstream proxy's credential (released by keys for the proxy's host), when its row names
    a secret."""
    via = config.via
    if via is None or via.proxy.secret is None:
        return config
    if credentials is None:
        raise ValueError("doors.net.upstream_proxy names a secret but the contract has no keys_socket (edge net→keys)")
    name, host = via.proxy.secret, str(via.proxy.host)

    async def credential() -> bytes:
        return await credentials(name, host)

    return replace(config, via=replace(via, credential=credential))


def proxy_listeners(listen_fds: Mapping[str, int]) -> list[tuple[str, trio.SocketListener]]:
    """(role, listener) for every `proxy.<role>` fd the launcher passed."""
    return [(name[len(PROXY_LISTENER_PREFIX):], listener_from_fd(fd))
            for name, fd in sorted(listen_fds.items()) if name.startswith(PROXY_LISTENER_PREFIX)]


def own_addresses(listeners: list[tuple[str, trio.SocketListener]]) -> frozenset[tuple[IPAddress, int]]:
    """Where the door itself listens: never a destination (no self-connection)."""
    found: set[tuple[IPAddress, int]] = set()
    for _, listener in listeners:
        if listener.socket.family in (socket.AF_INET, socket.AF_INET6):
            host, port = listener.socket.getsockname()[:2]
            found.add((ipaddress.ip_address(host), int(port)))
    return frozenset(found)


def proxy_routes(proxy: Proxy) -> list[TakeoverRoute]:
    """The proxy on the mTLS listener: the connection speaks for the client's SVID role (edge already checked)."""

    async def take_over(request: Request, stream: trio.abc.Stream) -> None:
        if request.peer_role is None:  # only an admitted client gets here; it always has a role
            return
        with contextlib.suppress(TlsFailure):  # the client reset its TLS: its audit event is already out
            await proxy.handle(stream, request.peer_role)

    return [TakeoverRoute(method, take_over) for method in PROXY_METHODS]


async def serve_net(contract: DoorContract, status: StatusSender, resolver: Resolver | None = None,
                    test_internet: tuple[IPNetwork, ...] = ()) -> None:
    """The door on mTLS (hello, and the proxy for doors on its edges) plus one proxy loop per `proxy.<role>`."""
    listeners = proxy_listeners(contract.listen_fds)
    config = config_from_rows(contract.rows, own_addresses(listeners), test_internet, contract.kept_secrets)
    proxy: Proxy | None = None

    def proxy_of(runtime: DoorRuntime) -> Proxy:  # one proxy, made once the runtime (its audit queue) exists
        nonlocal proxy
        if proxy is None:
            credentials = credentials_of(runtime, contract.rows)
            proxy = Proxy(with_proxy_credential(config, credentials), runtime.audit, resolver, report=runtime.report,
                          credentials=credentials)
        return proxy

    def routes(runtime: DoorRuntime) -> list[TakeoverRoute]:
        return proxy_routes(proxy_of(runtime))

    def background(runtime: DoorRuntime) -> list[Callable[[], Awaitable[None]]]:
        return [functools.partial(proxy_of(runtime).serve, listener, role) for role, listener in listeners]

    # The launcher's own rows (an fd number, a socket path) are how the door holds `inject`, not rows of their own.
    shown = {name: value for name, value in contract.rows.items() if name not in (EGRESS_FD_ROW, KEYS_SOCKET_ROW)}
    await serve_door(dataclasses.replace(contract, rows=shown), status, routes, held_rows=HELD_ROWS,
                     background=background)


def serve(contract: DoorContract) -> None:
    """Run the net door process from its contract; exit 1 with a fatal status message on a crash."""
    run_reporting(contract, lambda status: trio.run(serve_net, contract, status))
