"""Test support: doors serving a tiny router on Unix sockets or TCP loopback, with their events recorded.

For tests and benches only: SVIDs are written as files under a `sharness-`-named temporary directory.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import trio

from doors._http import Request, Response, Route, Router, json_response
from doors._transport._server import serve_mtls, unix_listener
from doors._transport._tls import TlsContext, client_context_from_file, server_context_from_file
from doors._transport.client_policy import Address, Dial
from pki.edges import EdgePolicy
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES


@contextlib.contextmanager
def scratch_dir() -> Iterator[str]:
    """A private `sharness-test-*` directory, removed afterwards even when the test fails."""
    path = tempfile.mkdtemp(prefix="sharness-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def whoami(request: Request) -> Response:
    return json_response({"peer_role": request.peer_role, "peer_id": request.peer_id})


def tiny_router(role: str) -> Router:
    return Router(role, [Route("GET", "/v0/whoami", whoami), Route("POST", "/v0/echo", _echo)])


async def _echo(request: Request) -> Response:
    return Response(200, (("content-type", "application/octet-stream"),), request.body)


@dataclass
class Session:
    """A session's PKI and scratch directory, able to start doors and build client dials."""

    pki: SessionPKI
    directory: str
    edges: frozenset[tuple[str, str]] = DEFAULT_EDGES
    events: list[dict[str, Any]] = field(default_factory=list)

    def svid_path(self, role: str) -> str:
        path = os.path.join(self.directory, f"{role}.svid.pem")
        return path if os.path.exists(path) else self.pki.write_svid(role, self.directory)

    def pem_path(self, name: str, pem: bytes) -> str:
        path = os.path.join(self.directory, f"{name}.pem")
        with open(path, "wb") as out:
            out.write(pem)
        return path

    def server_ctx(self, role: str) -> TlsContext:
        return server_context_from_file(self.pki.bundle_pem(), self.svid_path(role))

    def client_ctx(self, role: str) -> TlsContext:
        return client_context_from_file(self.pki.bundle_pem(), self.svid_path(role))

    def dial(self, server_role: str, address: Address, ctx: TlsContext,
             client_role: str | None = None) -> Dial:
        return Dial(server_role, address, ctx, self.pki.trust_domain, self.pki.session_id, client_role)

    async def start_door(self, nursery: trio.Nursery, role: str, *, tcp: bool = False,
                         ctx: TlsContext | None = None, router: Router | None = None,
                         name: str | None = None) -> Address:
        """Serve `role` (by default with its own SVID and the tiny router); return its address."""
        if tcp:
            listeners: list[trio.SocketListener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
            address: Address = listeners[0].socket.getsockname()[:2]
        else:
            path = os.path.join(self.directory, f"{name or role}.sock")
            listeners = [unix_listener(path)]
            address = path
        await nursery.start(serve_mtls, listeners, ctx or self.server_ctx(role), self.pki.identity(role),
                            EdgePolicy(self.edges), router or tiny_router(role), self.events.append)
        return address


@contextlib.asynccontextmanager
async def session(edges: frozenset[tuple[str, str]] = DEFAULT_EDGES) -> AsyncIterator[Session]:
    """A fresh session PKI in a scratch directory."""
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory, edges)


@contextlib.contextmanager
def doors_in_thread(s: Session, roles: dict[str, str], *, tcp: bool = False,
                    limits: Any = None) -> Iterator[dict[str, Address]]:
    """Serve doors from a trio loop in a thread (for blocking clients); `roles` maps name -> SVID role.

    The name is the role the door claims to be serving (its socket name); the SVID role may differ.
    """
    import queue
    import threading

    from doors._http import Limits

    started: queue.Queue[Any] = queue.Queue()

    async def main() -> None:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                addresses: dict[str, Address] = {}
                for name, svid_role in roles.items():
                    router = tiny_router(svid_role)
                    addresses[name] = await _start(s, nursery, name, svid_role, tcp, router,
                                                   limits or Limits())
                started.put((trio.lowlevel.current_trio_token(), scope, addresses))

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    token, scope, addresses = started.get(timeout=30)
    try:
        yield addresses
    finally:
        token.run_sync_soon(scope.cancel)
        thread.join(timeout=30)


async def _start(s: Session, nursery: trio.Nursery, name: str, svid_role: str, tcp: bool, router: Router,
                 limits: Any) -> Address:
    if tcp:
        listeners: list[trio.SocketListener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
        address: Address = listeners[0].socket.getsockname()[:2]
    else:
        address = os.path.join(s.directory, f"{name}.sock")
        listeners = [unix_listener(address)]
    await nursery.start(functools.partial(serve_mtls, listeners, s.server_ctx(svid_role),
                                          s.pki.identity(svid_role), EdgePolicy(s.edges), router,
                                          s.events.append, limits=limits))
    return address
