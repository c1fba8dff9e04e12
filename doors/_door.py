"""The generic door process: its SVID from the memfd, GET /v0/hello on mutual TLS, audit on the status fd.

A door-specific module (fs, net, ...) passes its routes and the rows it holds; everything else is here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from doors._audit_queue import AuditBackpressure, AuditQueue
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
    """What a door's own routes may use: who it is, its contexts, and its audit queue."""

    contract: DoorContract
    identity: SessionIdentity
    edge_policy: EdgePolicy
    server_ctx: TlsContext
    client_ctx: TlsContext
    audit_queue: AuditQueue

    def audit(self, event: dict[str, Any]) -> None:
        """Queue the event of an act, before the act; AuditBackpressure (a 503 refusal) when it cannot be
        queued: the caller must then not act. Never blocks."""
        if not self.audit_queue.put_act(event):
            raise AuditBackpressure(self.contract.role)

    def report(self, event: dict[str, Any]) -> None:
        """Queue an event about what already happened (a refusal, an exchange answered); counted as lost
        (and the launcher told) when it cannot be queued. Never blocks, never raises."""
        self.audit_queue.put_report(event)


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
    answer = json_response(hello_body(runtime.contract, held_rows))  # the contract is fixed: encode it once

    async def hello(request: Request) -> Response:
        return answer

    extra = routes(runtime) if callable(routes) else (routes or ())
    return Router(runtime.contract.role, [Route("GET", "/v0/hello", hello), *extra])


def _contexts(contract: DoorContract) -> tuple[TlsContext, TlsContext]:
    """Load the SVID once for serving and once for calling other doors, then close the memfd."""
    server_ctx = server_context_from_fd(contract.bundle_pem, contract.svid_fd)
    client_ctx = client_context_from_fd(contract.bundle_pem, contract.svid_fd)
    os.close(contract.svid_fd)
    return server_ctx, client_ctx


def send_at_once(status: StatusSender, queue: AuditQueue) -> Callable[[dict[str, Any]], bool]:
    """What sends an event straight from the handler that queued it, when the launcher has room (the queue's
    `send_at_once`): what the pump would send, with any count of lost events, a scheduler pass sooner."""

    def send(event: dict[str, Any]) -> bool:
        status.note_lost(queue.take_lost())
        return status.send_now(audit_message(event)) is not None

    return send


async def _pump(status: StatusSender, queue: AuditQueue) -> None:
    """Send every queued event, in order, waiting for the launcher; then what was lost, if anything."""
    while (event := await queue.get()) is not None:
        status.note_lost(queue.take_lost())
        await status.send(audit_message(event))
        status.note_lost(queue.take_lost())
        if not queue.statistics().queued and status.owes_count:
            await status.send_lost()
    status.note_lost(queue.take_lost())
    if status.owes_count:
        await status.send_lost()


async def _until_signal(cancel_scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for _ in signals:
            cancel_scope.cancel()
            return


Background = Callable[[DoorRuntime], Iterable[Callable[[], Awaitable[None]]]]
Announce = Callable[[], Iterable[dict[str, Any]]]  # status messages to send, in order, before ready


async def serve_door(contract: DoorContract, status: StatusSender, routes: RoutesArg = None, *,
                     held_rows: frozenset[str] = frozenset(), limits: Limits | None = None,
                     background: Background | None = None, announce: Announce | None = None) -> None:
    """Serve the door until SIGTERM/SIGINT/SIGHUP; report ready once listening (after `announce`'s messages,
    each waiting for the launcher to take it).

    `background` gives tasks (a proxy's own listeners) that serve beside the mTLS listener and stop with it.
    On a signal, serving stops first; every event queued by then still reaches the launcher, then the count
    of any lost.
    """
    server_ctx, client_ctx = _contexts(contract)
    identity = SessionIdentity(contract.trust_domain, contract.session_id, contract.role)
    queue = AuditQueue(AUDIT_QUEUE)
    queue.send_at_once = send_at_once(status, queue)
    runtime = DoorRuntime(contract, identity, EdgePolicy(frozenset(contract.edges)), server_ctx, client_ctx, queue)
    listener = listener_from_fd(contract.listen_fds[DOOR_LISTENER])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, status, queue)
        try:
            async with trio.open_nursery() as serving:
                serving.start_soon(_until_signal, serving.cancel_scope)
                await serving.start(functools.partial(serve_mtls, listener, server_ctx, identity,
                                                      runtime.edge_policy, _router(runtime, routes, held_rows),
                                                      runtime.report, limits=limits))
                for task in background(runtime) if background is not None else ():
                    serving.start_soon(task)
                for message in announce() if announce is not None else ():
                    if not await status.send(message):
                        raise RuntimeError(f"the launcher did not take the {message.get('type')} message")
                status.ready()
        finally:
            queue.close()  # the pump drains what the handlers queued, then ends


def run_door(contract: DoorContract, routes: RoutesArg = None, *, held_rows: frozenset[str] = frozenset(),
             limits: Limits | None = None, announce: Announce | None = None) -> None:
    """Run a door process to its end: exit 0 on SIGTERM, report fatal and exit 1 on a crash."""
    run_reporting(contract, lambda status: trio.run(functools.partial(
        serve_door, contract, status, routes, held_rows=held_rows, limits=limits, announce=announce)))


def run_reporting(contract: DoorContract, run: Callable[[StatusSender], object]) -> None:
    """Run a door process's `run(status)` (its trio.run, and whatever it checks first) to its end; on a crash,
    report fatal naming the innermost error on the status fd and exit 1. The status fd is closed either way."""
    status = StatusSender(contract.status_fd)
    try:
        run(status)
    except BaseException as exc:
        cause = _innermost(exc)
        status.fatal(f"the {contract.role} door failed: {type(cause).__name__}: {_first_line(cause)}")
        raise SystemExit(1) from exc
    finally:
        with contextlib.suppress(OSError):
            status.close()


def _innermost(exc: BaseException) -> BaseException:
    """The one error inside trio's nursery groups, so the fatal message names it (not "ExceptionGroup")."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:500]
