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
from doors.model._prices import Price, cost_microusd
from doors.model._record import CallRecord
from doors.model._upstream import Upstream, UpstreamResponse
from doors.model._usage import UsageError, UsageReader, UsageReport

# The upstream may pause between events (a model thinking) but not forever: past this, the call is cut.
UPSTREAM_IDLE_S = 600.0
CLOSE_GRACE_S = 5.0
UPSTREAM_FAILURES = (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, UsageError)
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

    def _settle(self, report: UsageReport | None, ended: str) -> None:
        if self._settled:
            return
        self._settled = True
        record = self.record
        if report is not None:
            record.usage = report.usage
        if ended == "complete" and report is not None:
            settlement = self.ledger.settle(self.reservation, cost_microusd(report.usage, self.price))
        elif ended == "upstream-error":
            settlement = self.ledger.settle(self.reservation, 0)  # the provider answered an error: it bills nothing
        else:
            settlement = self.ledger.settle_cut(self.reservation)
        record.charged_microusd, record.overrun_microusd = settlement.charged_microusd, settlement.overrun_microusd
        record.ended = ended
        self.on_end()
        self.finish(record)

    async def stream(self, response: UpstreamResponse, limit: int) -> AsyncIterator[bytes]:
        """The SSE body relayed as it arrives; an `error` event when it cannot finish."""
        reader = UsageReader(stream=True)
        ended, report = "client-gone", None
        self.record.status = 200
        try:
            try:
                async for chunk in _chunks(response):
                    reader.feed(chunk)
                    yield chunk
            except UPSTREAM_FAILURES:
                pass
            report = reader.finish()
            ended = "complete" if report.complete else "cut"
            if ended == "cut" and report.error_type is None:  # an upstream `error` event already said it
                yield sse_error_event("api_error", CUT_MESSAGE)
        finally:
            self._settle(report or reader.finish(), ended)
            await _close(self.upstream, response)

    async def whole(self, response: UpstreamResponse, limit: int) -> WholeAnswer:
        """A non-streaming answer read whole; a cut or oversized one becomes a 502 (charged in full)."""
        reader = UsageReader(stream=False)
        try:
            body = await self._read(response, limit, reader)
        except (*UPSTREAM_FAILURES, UpstreamTooLarge):
            self.record.status = 502
            self._settle(reader.finish(), "cut")
            return WholeAnswer(502, error_body("api_error", CUT_MESSAGE.replace("stream", "answer")))
        finally:
            await _close(self.upstream, response)
        self.record.status = response.status
        if response.status != 200:
            self._settle(None, "upstream-error")
        else:
            report = reader.finish()
            self._settle(report, "complete" if report.complete else "cut")
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
