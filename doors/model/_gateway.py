"""The model door's one chokepoint: every call is decided (model, price, budget), audited, then forwarded.

`Gateway.routes()` serves the Messages API the same on both transports (mutual TLS and the plain-HTTP listener
inside the caller's network namespace); the caller is who its connection says (its SVID, or the namespace the
kernel put the listener in), never what it sends as a credential. Reserve before, reconcile after: a call
reserves its worst case, the forwarded `max_tokens` is lowered to what the budget can pay, and what the usage
reports is charged; a call that does not end properly is charged its whole reservation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import trio

from doors._audit_queue import AuditBackpressure
from doors._http import Request, Response, Route, json_body
from doors._refusal import DoorRefused, Refusal
from doors.model._api import SSE_TYPE, json_answer, new_request_id, refusal_response
from doors.model._body import BodiesInFlight, read_body
from doors.model._budget import Ledger
from doors.model._config import ModelConfig
from doors.model._errors import ROW_BUDGET, WHO
from doors.model._prices import Price
from doors.model._record import CallRecord
from doors.model._relay import UPSTREAM_FAILURES, Relay
from doors.model._shape import (
    decoded_body,
    estimate_input_tokens,
    forward_headers,
    listed_models,
    model_price,
    plan_call,
    read_request,
)
from doors.model._upstream import Upstream, UpstreamRequest, UpstreamResponse

AuditSink = Callable[[dict[str, Any]], None]
KeySource = Callable[[], Awaitable[bytes]]  # the provider key, released for one request
MESSAGES, COUNT_TOKENS, MODELS = "/v1/messages", "/v1/messages/count_tokens", "/v1/models"
# Read by the route only to let the body reach the handler, which holds the real limit (max_body_bytes) and
# answers past it in the API's shape.
ROUTE_BODY_CEILING = 1 << 40
RETRY_AFTER_S = 1
ROW_MAX_CALLS = "doors.model.max_calls"


class Gateway:
    """The Messages API routes over one upstream, one ledger and the door's audit."""

    def __init__(self, config: ModelConfig, upstream: Upstream, key_source: KeySource | None,
                 audit: AuditSink, report: AuditSink) -> None:
        self.config = config
        self.upstream = upstream
        self.ledger = Ledger(config.budget_microusd)
        self._key_source = key_source
        self._audit = audit
        self._report = report
        self.in_flight = 0
        self.bodies = BodiesInFlight(config.max_body_bytes_in_flight)

    def routes(self) -> list[Route]:
        """The API's routes, then a catch-all that answers 404 in the API's shape (with a request id)."""
        ceiling = ROUTE_BODY_CEILING
        return [Route("POST", MESSAGES, self.messages, True, ceiling),
                Route("POST", COUNT_TOKENS, self.count_tokens, True, ceiling),
                Route("GET", MODELS, self.models),
                *(Route(method, "/*", self.not_found, True, ceiling)
                  for method in ("GET", "POST", "HEAD", "PUT", "DELETE", "PATCH"))]

    # -- routes --
    async def messages(self, request: Request) -> Response:
        """POST /v1/messages, streaming or not."""
        record = self._record(request, MESSAGES)
        try:
            return await self._messages(request, record)
        except DoorRefused as refused:
            return self._refused(record, refused)

    async def count_tokens(self, request: Request) -> Response:
        """POST /v1/messages/count_tokens: forwarded as it is (the provider does not bill it)."""
        record = self._record(request, COUNT_TOKENS)
        try:
            _, body, _ = await self._read_call(request, record, "count_tokens")
            self._announce(record)
            upstream = await self._exchange(request, body, COUNT_TOKENS)
            answer = await Relay.read_whole(self.upstream, upstream, self.config.max_body_bytes)
        except DoorRefused as refused:
            return self._refused(record, refused)
        except UPSTREAM_FAILURES as exc:
            return self._refused(record, DoorRefused(_unreachable(self.upstream.name, exc)))
        record.upstream_status = record.status = upstream.status
        record.ended = "complete"
        self._finish(record)
        return json_answer(answer, record.request_id, upstream.status, _passed_back(upstream))

    async def models(self, request: Request) -> Response:
        """GET /v1/models: the models the manifest allows, in the API's list shape."""
        record = self._record(request, MODELS)
        data = [{"type": "model", "id": name, "display_name": name, "created_at": "1970-01-01T00:00:00Z"}
                for name in listed_models(self.config.models, self.config.prices)]
        listing = {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                   "last_id": data[-1]["id"] if data else None}
        return json_answer(json_body(listing), record.request_id)

    async def not_found(self, request: Request) -> Response:
        """Any other path: 404 in the API's shape."""
        record = self._record(request, request.path[:200])
        refusal = Refusal(404, "http.route", WHO, f"no route {request.method} {request.path[:200]}",
                          f"the model door serves POST {MESSAGES}, POST {COUNT_TOKENS} and GET {MODELS}")
        return self._refused(record, DoorRefused(refusal), head=request.method == "HEAD")

    # -- one call --
    async def _messages(self, request: Request, record: CallRecord) -> Response:
        if self.in_flight >= self.config.max_calls:
            raise _overloaded(f"{self.config.max_calls} calls are in flight", ROW_MAX_CALLS)
        document, body, price = await self._read_call(request, record, "messages")
        record.streamed = document.get("stream") is True
        plan = plan_call(document, price, self.ledger.remaining, estimate_input_tokens(body),
                         self.config.floor_tokens)
        if isinstance(plan, Refusal):
            raise DoorRefused(plan)
        reservation = self.ledger.reserve(plan.reserve_microusd)  # no await since `remaining` was read
        if reservation is None:
            raise DoorRefused(_budget_spent(self.ledger.remaining, plan.reserve_microusd))
        record.reserved_microusd = plan.reserve_microusd
        relay = Relay(self.upstream, self.ledger, reservation, price, record, self._finish)
        self.in_flight += 1
        try:
            self._announce(record)
            upstream = await self._exchange(request, plan.forward_body, MESSAGES)
        except BaseException:
            self.in_flight -= 1
            relay.settle_unsent()
            raise
        record.upstream_status = upstream.status
        relay.on_end = self._call_ended
        if record.streamed and upstream.status == 200:
            return Response(200, (("content-type", SSE_TYPE), ("cache-control", "no-cache"),
                                  ("request-id", record.request_id), *_passed_back(upstream)),
                            relay.stream(upstream, self.config.max_body_bytes), flush_each=True)
        answer = await relay.whole(upstream, self.config.max_body_bytes)
        return json_answer(answer.body, record.request_id, answer.status, _passed_back(upstream))

    def _call_ended(self) -> None:
        self.in_flight -= 1

    async def _read_call(self, request: Request, record: CallRecord,
                         endpoint: str) -> tuple[dict[str, Any], bytes, Price]:
        """The body (inflated) as a JSON object naming an allowed, priced model, and that model's price."""
        assert request.body_stream is not None
        sent = await read_body(request.body_stream, self.config.max_body_bytes, self.bodies,
                               request.header("content-length"))
        body = _held(decoded_body(_raw(request.headers), sent, self.config.max_body_bytes))
        document = _held(read_request(body, endpoint))
        record.model = str(document["model"])[:200]
        price = _held(model_price(document["model"], self.config.models, self.config.prices))
        return document, body, price

    def _announce(self, record: CallRecord) -> None:
        try:
            self._audit(record.open_event())
        except AuditBackpressure as refused:
            raise _overloaded(str(refused.refusal.detail), refused.refusal.row) from None

    async def _exchange(self, request: Request, body: bytes, path: str) -> UpstreamResponse:
        """Forward to the upstream with the released key; the client's own credentials never go on."""
        # The body is re-encoded JSON, whatever content-type came with it.
        headers = [(b"content-type", b"application/json"),
                   *((name, value) for name, value in forward_headers(_raw(request.headers))
                     if name != b"content-type")]
        if self._key_source is not None:
            headers.append((b"x-api-key", await self._key_source()))
        try:
            response = await self.upstream.exchange(UpstreamRequest(b"POST", path.encode(), tuple(headers), body))
        except OSError as exc:
            raise DoorRefused(_unreachable(self.upstream.name, exc)) from exc
        finally:
            del headers  # the released key goes with this request
        if not 200 <= response.status <= 599 or response.status in (204, 304):  # a status that cannot carry JSON
            await self.upstream.aclose_response(response)
            raise DoorRefused(_unreachable(self.upstream.name, OSError(f"it answered status {response.status}")))
        return response

    # -- records --
    def _record(self, request: Request, route: str) -> CallRecord:
        return CallRecord(role=request.peer_role or "", route=route, request_id=new_request_id(),
                          upstream=self.upstream.name, started=trio.current_time())

    def _refused(self, record: CallRecord, refused: DoorRefused, *, head: bool = False) -> Response:
        refusal = refused.refusal
        record.status, record.row, record.ended = refusal.status, refusal.row, "refused"
        self._finish(record)
        retry = RETRY_AFTER_S if refusal.status in (429, 529) else None
        response = refusal_response(refusal, record.request_id, retry_after_s=retry, close=refused.close)
        return replace(response, body=b"") if head else response  # a HEAD answer has no body

    def _finish(self, record: CallRecord) -> None:
        self._report(record.event(trio.current_time()))


def _held(outcome: Any) -> Any:
    """A core step's value, or its Refusal raised."""
    if isinstance(outcome, Refusal):
        raise DoorRefused(outcome)
    return outcome


def _raw(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[bytes, bytes], ...]:
    return tuple((name.encode("latin-1"), value.encode("latin-1")) for name, value in headers)


def _overloaded(why: str, row: str) -> DoorRefused:
    return DoorRefused(Refusal(529, row, WHO, f"the model door is overloaded: {why}", "retry after a moment"))


def _unreachable(name: str, exc: BaseException) -> Refusal:
    why = str(exc) if isinstance(exc, OSError) and str(exc) else type(exc).__name__
    return Refusal(502, "doors.model.upstream", WHO, f"the upstream {name} failed: {why}",
                   "check doors.model.upstream and the door's log; nothing was charged")


def _budget_spent(remaining: int, needed: int) -> Refusal:
    return Refusal(402, ROW_BUDGET, WHO,
                   f"the session's model budget cannot pay this call: {remaining} micro-USD remain, "
                   f"the call needs {needed} reserved", "raise doors.model.budget_microusd or start a new session")


def _passed_back(upstream: UpstreamResponse) -> tuple[tuple[str, str], ...]:
    """Upstream headers a client acts on (retry advice, the provider's own id); nothing else comes back."""
    wanted = {b"retry-after", b"x-should-retry", b"request-id"}
    return tuple(("upstream-request-id" if name.lower() == b"request-id" else name.decode("latin-1").lower(),
                  value.decode("latin-1")) for name, value in upstream.headers if name.lower() in wanted)

