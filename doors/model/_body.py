"""A request body read under the door's size limit, gunzipped when the client says so. The limit holds for
what the body inflates to, so a small gzip bomb is refused like a large body."""

from __future__ import annotations

import json
import zlib
from typing import Any

from doors._http import BodyStream
from doors._refusal import DoorRefused, Refusal

WHO = "model"
ROW_MAX_BODY = "doors.model.max_body_bytes"


def _too_large(limit: int) -> DoorRefused:
    return DoorRefused(Refusal(413, ROW_MAX_BODY, WHO, f"the request body is larger than {limit} bytes",
                               "send a smaller request"), close=True)


async def read_body(stream: BodyStream, limit: int, content_encoding: str | None) -> bytes:
    """The whole body (inflated when gzip), at most `limit` bytes; DoorRefused 413/415 otherwise."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise DoorRefused(Refusal(400, "http.content_encoding", WHO, f"content-encoding {encoding!r} is not read",
                                  "send the body plain or gzip"), close=True)
    inflate = zlib.decompressobj(wbits=31) if encoding == "gzip" else None
    parts = bytearray()
    while piece := await stream.receive_some():
        if inflate is not None:
            try:
                piece = inflate.decompress(piece, limit + 1 - len(parts))
            except zlib.error as exc:
                raise DoorRefused(Refusal(400, "http.gzip", WHO, f"the gzip body does not inflate: {exc}",
                                          "send a valid gzip body"), close=True) from exc
            if inflate.unconsumed_tail:
                raise _too_large(limit)
        parts += piece
        if len(parts) > limit:
            raise _too_large(limit)
    return bytes(parts)


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object; DoorRefused 400 naming what is wrong otherwise."""
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DoorRefused(Refusal(400, "http.json", WHO, f"the body is not JSON: {exc}",
                                  "send a JSON object")) from exc
    if not isinstance(value, dict):
        raise DoorRefused(Refusal(400, "http.json", WHO, "the body is not a JSON object", "send a JSON object"))
    return value
