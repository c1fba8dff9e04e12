"""A request body read off the connection under the door's size limits (what it inflates to is the core's:
doors/model/_shape.py decoded_body).

Two limits: one body's (`max_body_bytes`, the API's 32 MiB), and all bodies being read at once
(`BodiesInFlight`): a door's memory is a cgroup's 256 MiB, and a parsed JSON body takes several times its
bytes, so 64 callers each sending 32 MiB must meet a 529, not the OOM killer.
"""

from __future__ import annotations

from doors._http import BodyStream
from doors._refusal import DoorRefused, Refusal
from doors.model._errors import ROW_REQUEST, WHO

ROW_IN_FLIGHT = "doors.model.max_body_bytes_in_flight"


def _too_large(limit: int) -> DoorRefused:
    return DoorRefused(Refusal(413, ROW_REQUEST, WHO, f"the request body is over {limit} bytes",
                               "send a smaller request"), close=True)


class BodiesInFlight:
    """Bytes of request bodies the door holds at once, across every call; past `limit`, a 529."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, amount: int) -> None:
        if self.held + amount > self.limit:
            raise DoorRefused(Refusal(529, ROW_IN_FLIGHT, WHO,
                                      f"the model door is reading {self.held} bytes of requests already",
                                      "retry in a moment"), close=True)
        self.held += amount

    def give_back(self, amount: int) -> None:
        self.held -= amount


async def read_body(stream: BodyStream, limit: int, in_flight: BodiesInFlight,
                    content_length: str | None = None) -> bytes:
    """The whole body as sent, at most `limit` bytes; DoorRefused 413 (closing the connection) past it, at once
    when the declared length is already over it; 529 when all bodies in flight would pass their limit."""
    if content_length is not None and content_length.isdigit() and int(content_length) > limit:
        raise _too_large(limit)
    parts = bytearray()
    try:
        while piece := await stream.receive_some():
            in_flight.take(len(piece))
            parts += piece
            if len(parts) > limit:
                raise _too_large(limit)
        return bytes(parts)
    finally:
        in_flight.give_back(len(parts))
