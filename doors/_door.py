"""The generic door process: its SVID from the memfd, GET /v0/hello on mutual TLS, audit on the status fd.

A door-specific module (fs, net, ...) passes its routes and the rows it holds; everything else is here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from doors._contract import DoorContract
from doors._http import Limits, Request, Response, Route, Router, TakeoverRoute, json_response
from doors._status import StatusSender
from doors._transport import (
    TlsContext,
    client_context_from_fd,
    listener_from_fd,
    serve_mtls,
    server_context_from_fd,
)
from pki.edges import EdgePolicy
from pki.spiffe import SessionIdentity
from pki.vocabulary import BOUNDARY, DOOR_LISTENER, UNHELD, audit_message

AUDIT_QUEUE = 1024


@dataclass
class DoorRuntime:
    """What a door's own routes may use: who it is, its contexts, and its audit channel."""

    contract: DoorContract
    identity: SessionIdentity
    edge_policy: EdgePolicy
    server_ctx: TlsContext
    client_ctx: TlsContext
    audit_channel: trio.MemorySendChannel[dict[str, Any]]
    dropped: int = 0

    def audit(self, event: dict[str, Any]) -> None:
        """Queue one audit event for the launcher; never blocks (a full queue counts as dropped)."""
        try:
            self.audit_channel.send_nowait(event)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            self.dropped += 1


DoorRoutes = Iterable[Route | TakeoverRoute]
RoutesArg = DoorRoutes | Callable[[DoorRuntime], DoorRoutes] | None


def hello_body(contract: DoorContract, held_rows: frozenset[str] = frozenset()) -> dict[str, Any]:
    """What GET /v0/hello answers: identity, session, each row with its barrier kind, edges in."""
    identity = SessionIdentity(contract.trust_domain, contract.session_id, contract.role)
    clients = sorted(EdgePolicy(frozenset(contract.edges)).clients_of(contract.role))
    rows = [{"row": "edges", "value": clients, "barrier": BOUNDARY, "held": True,
             "held_by": f"the {contract.role} door's mutual-TLS edge check (a process the client is not)"}]
    for name, value in sorted(contract.rows.items()):
        held = name in held_rows
        rows.append({"row": f"{contract.role}.{name}", "value": value, "barrier": BOUNDARY if held else UNHELD,
                     "held": held, "held_by": f"the {contract.role} door" if held else
                     f"nothing yet: the {contract.role} door's own features are not built"})
    return {"role": contract.role, "spiffe_id": identity.uri(), "session": contract.session_id,
            "trust_domain": contract.trust_domain, "not_after": contract.not_after,
            "edges_in": clients, "rows": rows}


def _router(runtime: DoorRuntime, routes: RoutesArg, held_rows: frozenset[str]) -> Router:
    body = hello_body(runtime.contract, held_rows)

    async def hello(request: Request) -> Response:
        return json_response(body)

    extra = routes(runtime) if callable(routes) else (routes or ())
    return Router(runtime.contract.role, [Route("GET", "/v0/hello", hello), *extra])


def _contexts(contract: DoorContract) -> tuple[TlsContext, TlsContext]:
    """Load the SVID once for serving and once for calling other doors, then close the memfd."""
    server_ctx = server_context_from_fd(contract.bundle_pem, contract.svid_fd)
    client_ctx = client_context_from_fd(contract.bundle_pem, contract.svid_fd)
    os.close(contract.svid_fd)
    return server_ctx, client_ctx


async def _pump(status: StatusSender, receive: trio.MemoryReceiveChannel[dict[str, Any]]) -> None:
    async with receive:
        async for event in receive:
            await status.send(audit_message(event))


async def _until_signal(cancel_scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for _ in signals:
            cancel_scope.cancel()
            return


async def serve_door(contract: DoorContract, status: StatusSender, routes: RoutesArg = None, *,
                     held_rows: frozenset[str] = frozenset(), limits: Limits | None = None) -> None:
    """Serve the door until SIGTERM/SIGINT/SIGHUP; report ready once listening."""
    server_ctx, client_ctx = _contexts(contract)
    send, receive = trio.open_memory_channel[dict[str, Any]](AUDIT_QUEUE)
    identity = SessionIdentity(contract.trust_domain, contract.session_id, contract.role)
    runtime = DoorRuntime(contract, identity, EdgePolicy(frozenset(contract.edges)), server_ctx, client_ctx,
                          send)
    listener = listener_from_fd(contract.listen_fds[DOOR_LISTENER])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, status, receive)
        nursery.start_soon(_until_signal, nursery.cancel_scope)
        await nursery.start(functools.partial(serve_mtls, listener, server_ctx, identity, runtime.edge_policy,
                                              _router(runtime, routes, held_rows), runtime.audit,
                                              limits=limits))
        status.ready()


def run_door(contract: DoorContract, routes: RoutesArg = None, *, held_rows: frozenset[str] = frozenset(),
             limits: Limits | None = None) -> None:
    """Run a door process to its end: exit 0 on SIGTERM, report fatal and exit 1 on a crash."""
    status = StatusSender(contract.status_fd)
    try:
        trio.run(functools.partial(serve_door, contract, status, routes, held_rows=held_rows, limits=limits))
    except BaseException as exc:
        status.fatal(f"the {contract.role} door failed: {type(exc).__name__}: {_first_line(exc)}")
        raise SystemExit(1) from exc
    finally:
        with contextlib.suppress(OSError):
            status.close()


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:500]
