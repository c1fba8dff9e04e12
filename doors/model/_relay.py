"""An upstream answer on its way back to the caller, read through the usage reader and settled exactly once.

A call is charged what its usage reports only when it ended properly (`message_stop` seen, or a whole JSON
message); a stream the upstream cut, or one the caller left, is charged its whole reservation: the provider
may have billed it, and the door never under-charges. A stream that cannot finish ends with an SSE `error`
event, never a bare close (SDKs accept a cut stream silently, and agents re-send it and pay again).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import trio

from doors.model._budget import Ledger, Reservation
from doors.model._errors import error_body, sse_error_event
from doors.model._prices import Price
from doors.model._record import CallRecord
from doors.model._upstream import Upstream, UpstreamResponse
from doors.model._usage import UsageReader, cost_microusd

# The upstream may pause between events (a model thinking) but not forever: past this, the call is cut.
UPSTREAM_IDLE_S = 600.0
CLOSE_GRACE_S = 5.0
UPSTREAM_FAILURES = (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError)
CUT_MESSAGE = "the upstream ended the stream before message_stop; the call was charged its whole reservation"


@dataclass(frozen=True)
class WholeAnswer:
    status: int
    body: bytes


class UpstreamTooLarge(Exception):
    """The upstream's answer is larger than the door relays whole."""


async def _chunks(response: UpstreamResponse) -> AsyncIterator[bytes]:
    body = aiter(response.body)
    while True:
        with trio.fail_after(UPSTREAM_IDLE_S):
            chunk = await anext(body, None)
        if chunk is None:
            return
        yield chunk


async def _close(upstream: Upstream, response: UpstreamResponse) -> None:
    # Shielded: a caller gone (or the door stopping) must still let go of the upstream connection.
    with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_GRACE_S):
        await upstream.aclose_response(response)


class Relay:
    """Settles one reservation from one upstream answer, then reports the call's record."""

    def __init__(self, upstream: Upstream, ledger: Ledger, reservation: Reservation, price: Price,
                 record: CallRecord, finish: Callable[[CallRecord], None]) -> None:
        self.upstream = upstream
        self.ledger = ledger
        self.reservation = reservation
        self.price = price
        self.record = record
        self.finish = finish
        self.on_end: Callable[[], None] = lambda: None
        self._settled = False

    def settle_unsent(self) -> None:
        """Nothing was forwarded (refused before, or the upstream unreachable): nothing is charged."""
        self.ledger.settle(self.reservation, 0)
        self._settled = True

    def _settle(self, reader: UsageReader | None, ended: str) -> None:
        if self._settled:
            return
        self._settled = True
        record = self.record
        if reader is not None:
            record.usage = reader.usage
        if ended == "complete" and reader is not None:
            charged = min(cost_microusd(reader.usage, self.price), record.reserved_microusd)
        elif ended == "upstream-error":
            charged = 0  # the provider answered an error: it bills nothing
        else:
            charged = record.reserved_microusd
        self.ledger.settle(self.reservation, charged)
        record.charged_microusd, record.ended = charged, ended
        self.on_end()
        self.finish(record)

    async def stream(self, response: UpstreamResponse, limit: int) -> AsyncIterator[bytes]:
        """The SSE body relayed as it arrives; an `error` event when it cannot finish."""
        reader = UsageReader()
        ended = "client-gone"
        self.record.status = 200
        try:
            try:
                async for chunk in _chunks(response):
                    reader.feed(chunk)
                    yield chunk
                ended = "complete" if reader.complete else "cut"
            except UPSTREAM_FAILURES:
                ended = "cut"
            if ended == "cut":
                yield sse_error_event("api_error", CUT_MESSAGE)
        finally:
            self._settle(reader, ended)
            await _close(self.upstream, response)

    async def whole(self, response: UpstreamResponse, limit: int) -> WholeAnswer:
        """A non-streaming answer read whole; a cut or oversized one becomes a 502 (charged in full)."""
        reader = UsageReader()
        try:
            body = await self._read(response, limit, reader)
        except (*UPSTREAM_FAILURES, UpstreamTooLarge):
            self.record.status = 502
            self._settle(reader, "cut")
            return WholeAnswer(502, error_body("api_error", CUT_MESSAGE.replace("stream", "answer")))
        finally:
            await _close(self.upstream, response)
        self.record.status = response.status
        if response.status != 200:
            self._settle(None, "upstream-error")
        else:
            self._settle(reader, "complete" if reader.complete else "cut")
        return WholeAnswer(response.status, body)

    @staticmethod
    async def _read(response: UpstreamResponse, limit: int, reader: UsageReader | None) -> bytes:
        parts = bytearray()
        async for chunk in _chunks(response):
            if reader is not None:
                reader.feed(chunk)
            parts += chunk
            if len(parts) > limit:
                raise UpstreamTooLarge()
        return bytes(parts)

    @staticmethod
    async def read_whole(upstream: Upstream, response: UpstreamResponse, limit: int) -> bytes:
        """An answer that costs nothing (count_tokens), read whole and closed."""
        try:
            return await Relay._read(response, limit, None)
        finally:
            await _close(upstream, response)
