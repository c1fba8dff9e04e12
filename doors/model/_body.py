"""A request body read off the connection under the door's size limit (what it inflates to is the core's:
doors/model/_shape.py decoded_body)."""

from __future__ import annotations

from doors._http import BodyStream
from doors._refusal import DoorRefused, Refusal
from doors.model._errors import ROW_REQUEST, WHO


async def read_body(stream: BodyStream, limit: int) -> bytes:
    """The whole body as sent, at most `limit` bytes; DoorRefused 413 (closing the connection) past it."""
    parts = bytearray()
    while piece := await stream.receive_some():
        parts += piece
        if len(parts) > limit:
            raise DoorRefused(Refusal(413, ROW_REQUEST, WHO, f"the request body is over {limit} bytes",
                                      "send a smaller request"), close=True)
    return bytes(parts)
