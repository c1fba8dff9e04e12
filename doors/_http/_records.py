"""Request and response records, the error shape, and JSON helpers. Pure: no I/O."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

# Statuses a door uses for refusals; the error shape is the same for all of them.
# 507: a session quota is spent or the disk is full (the fs door), as opposed to 413 for one body too large.
ERROR_STATUSES = frozenset({400, 403, 404, 405, 408, 409, 413, 414, 429, 431, 500, 502, 503, 504, 507})

JSON_TYPE = "application/json"


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
        """Return the body parsed as JSON, or raise HttpError 400 naming the problem."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError as exc:
            raise HttpError(400, "http.json", "door", f"body is not JSON: {exc}", "send a JSON body") from exc


@dataclass(frozen=True)
class Response:
    """One HTTP response; `body` may be an async iterable for streaming, then sent chunked."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | AsyncIterable[bytes] = b""
    close: bool = False
    content_length: int | None = None

    def header(self, name: str) -> str | None:
        """Return the first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


class HttpError(Exception):
    """A refusal that becomes the error shape: row, who refused, detail, and what to change."""

    def __init__(self, status: int, error: str, who: str, detail: Any, hint: str, *, close: bool = False):
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.error = error
        self.who = who
        self.detail = detail
        self.hint = hint
        self.close = close

    def response(self) -> Response:
        """Return this refusal as a JSON response in the error shape."""
        return error_response(self.status, self.error, self.who, self.detail, self.hint, close=self.close)


def json_body(value: Any) -> bytes:
    """Encode `value` as compact UTF-8 JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(value: Any, status: int = 200, *, close: bool = False) -> Response:
    """Return a JSON response."""
    return Response(status, (("content-type", JSON_TYPE),), json_body(value), close=close)


def error_response(
    status: int, error: str, who: str, detail: Any, hint: str, *, close: bool = False
) -> Response:
    """Return `{"error", "who", "detail", "hint"}` with `status`."""
    if status not in ERROR_STATUSES:
        raise ValueError(f"status {status} is not an error status a door uses")
    shape = {"error": error, "who": who, "detail": detail, "hint": hint}
    return json_response(shape, status, close=close)
