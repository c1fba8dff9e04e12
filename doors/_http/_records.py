"""Request and response records, the error response, and JSON helpers. Pure: no I/O."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from doors._refusal import DoorRefused, Refusal
from pki.vocabulary import json_of

# Statuses a door uses for refusals; the error shape is the same for all of them.
# 507: a session quota is spent or the disk is full (the fs door), as opposed to 413 for one body too large.
ERROR_STATUSES = frozenset({400, 403, 404, 405, 408, 409, 413, 414, 429, 431, 500, 502, 503, 504, 507})

JSON_TYPE = "application/json"
# json.dumps builds a new encoder on every call that passes options; this one is built once.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


class BodyStream(Protocol):
    """A request body read piece by piece, with the route's limits (for doors that stream large bodies)."""

    async def receive_some(self) -> bytes:
        """Return the next piece of the body, b"" at its end."""
        ...


@dataclass(frozen=True)
class Request:
    """One HTTP request as a door handler sees it; header names are lowercase."""

    method: str
    target: str
    path: str
    query: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    peer_role: str | None = None
    peer_id: str | None = None
    rest: str = ""
    body_stream: BodyStream | None = None

    def header(self, name: str) -> str | None:
        """Return the first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    def json(self) -> Any:
        """Return the body parsed as JSON, or raise DoorRefused 400 naming the problem."""
        try:
            return json_of(self.body)
        except ValueError as exc:
            refusal = Refusal(400, "http.json", "door", f"body is not JSON: {exc}", "send a JSON body in UTF-8")
            raise DoorRefused(refusal) from exc




@dataclass(frozen=True)
class Response:
    """One HTTP response; `body` may be an async iterable for streaming, then sent chunked."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | AsyncIterable[bytes] = b""
    close: bool = False
    content_length: int | None = None
    # A streamed body whose every piece goes out as it is produced (server-sent events), not coalesced.
    flush_each: bool = False

    def header(self, name: str) -> str | None:
        """Return the first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


def json_body(value: Any) -> bytes:
    """Encode `value` as compact UTF-8 JSON."""
    return _COMPACT.encode(value).encode()


def json_response(value: Any, status: int = 200, *, close: bool = False) -> Response:
    """Return a JSON response."""
    return Response(status, (("content-type", JSON_TYPE),), json_body(value), close=close)


def error_response(refusal: Refusal, *, close: bool = False) -> Response:
    """Return the refusal's `{"error", "who", "detail", "hint"}` with its status."""
    if refusal.status not in ERROR_STATUSES:
        raise ValueError(f"status {refusal.status} is not an error status a door uses")
    return json_response(refusal.shape(), refusal.status, close=close)


def refused_response(refused: DoorRefused) -> Response:
    """Return a raised refusal as its error response (closing the connection when it asks)."""
    return error_response(refused.refusal, close=refused.close)
