"""A request body read off the connection under the door's size limit (what it inflates to is the core's:
doors/model/_shape.py decoded_body)."""

from __future__ import annotations

from doors._http import BodyStream
from doors._refusal import DoorRefused, Refusal
from doors.model._errors import ROW_REQUEST, WHO


def _too_large(limit: int) -> DoorRefused:
    return DoorRefused(Refusal(413, ROW_REQUEST, WHO, f"the request body is over {limit} bytes",
                               "send a smaller request"), close=True)


async def read_body(stream: BodyStream, limit: int, content_length: str | None = None) -> bytes:
    """The whole body as sent, at most `limit` bytes; DoorRefused 413 (closing the connection) past it, at once
    when the declared length is already over it."""
    if content_length is not None and content_length.isdigit() and int(content_length) > limit:
        raise _too_large(limit)
    parts = bytearray()
    while piece := await stream.receive_some():
        parts += piece
        if len(parts) > limit:
            raise _too_large(limit)
    return bytes(parts)
