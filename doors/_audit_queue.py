"""A door's audit events on their way to the launcher: bounded, never dropped in silence.

An event that must precede an act (`put_act`) may fill the queue only up to `act_limit`; a report of
something already done or refused (`put_report`) may use the rest, so the 503 a full queue causes is itself
reported while there is room. A report that cannot be queued is counted: the pump hands the count to the
launcher, which writes it as an `audit.lost` event. An act whose event cannot be queued is not done, so
nothing about it is lost; the request's own report (its 503) says it happened.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio

from doors._refusal import DoorRefused, Refusal

AUDIT_BACKPRESSURE = "audit_backpressure"


class AuditBackpressure(DoorRefused):
    """The event of an act could not be queued: the door answers 503 and does not act."""

    def __init__(self, role: str) -> None:
        super().__init__(Refusal(
            503, AUDIT_BACKPRESSURE, role,
            f"the launcher is behind on the audit log: the {role} door did nothing rather than act unaudited",
            "retry in a moment; nothing was done (the door acts only once the event of the act is queued)",
        ))


@dataclass(frozen=True)
class AuditQueueStatistics:
    queued: int
    capacity: int
    lost: int  # reports never queued since the door started (told to the launcher or not yet)


class AuditQueue:
    """A bounded FIFO of audit events, filled from the trio thread and read by one pump task."""

    def __init__(self, capacity: int, act_share: float = 0.75) -> None:
        self.capacity = capacity
        self.act_limit = max(1, int(capacity * act_share))
        self._events: deque[dict[str, Any]] = deque()
        self._waiting = trio.lowlevel.ParkingLot()
        self._closed = False
        self._lost_unreported = 0
        self._lost_total = 0
        # Sends an event to the launcher now if it can (True: sent, or counted as dropped with the launcher gone);
        # tried only when nothing is queued or in the pump's hands, so events still leave in the order put.
        self.send_at_once: Callable[[dict[str, Any]], bool] | None = None
        self._in_flight = False  # the pump took an event (and may send a count after it) and is not back yet

    def _put(self, event: dict[str, Any], limit: int) -> bool:
        if self._closed:
            return False
        if not self._events and not self._in_flight and self.send_at_once is not None and self.send_at_once(event):
            return True  # no wake-up of the pump, no scheduler pass: most events meet an empty queue
        if len(self._events) >= limit:
            return False
        self._events.append(event)
        self._waiting.unpark()
        return True

    def put_act(self, event: dict[str, Any]) -> bool:
        """Queue the event of an act the caller will do only if this returns True."""
        return self._put(event, self.act_limit)

    def put_report(self, event: dict[str, Any]) -> bool:
        """Queue an event about what already happened; False when it was counted as lost instead."""
        if self._put(event, self.capacity):
            return True
        self._lost_unreported += 1
        self._lost_total += 1
        return False

    async def get(self) -> dict[str, Any] | None:
        """The oldest event, waiting for one; None once the queue is closed and empty. The pump calls it again
        only once it sent the last one (and any count after it)."""
        self._in_flight = False
        if self._events or self._closed:  # no wait ahead: still let the handlers run between two sends
            await trio.lowlevel.checkpoint()
        while not self._events:  # parking is a checkpoint of its own
            if self._closed:
                return None
            await self._waiting.park()
        self._in_flight = True
        return self._events.popleft()

    def take_lost(self) -> int:
        """How many events were lost since the last call (the pump tells the launcher)."""
        lost, self._lost_unreported = self._lost_unreported, 0
        return lost

    def close(self) -> None:
        """No more events: `get` drains what is queued, then returns None; later puts count as lost."""
        self._closed = True
        self._waiting.unpark_all()

    def statistics(self) -> AuditQueueStatistics:
        return AuditQueueStatistics(len(self._events), self.capacity, self._lost_total)
