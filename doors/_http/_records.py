"""Request and response records, the error response, and JSON helpers. Pure: no I/O."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from doors._refusal import DoorRefused, Refusal

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


# Where json.loads may have left a lone surrogate: a \uD800-\uDFFF escape (a pair decodes to one code point).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_of(body: bytes) -> Any:
    """A request body parsed as JSON (None when empty); ValueError saying why it is not Unicode JSON: not UTF-8
    (RFC 8259 8.1; json.loads of bytes would let encoded surrogates pass), not JSON, nested past the
    interpreter's depth, or a string holding a lone surrogate escape (JSON's grammar allows it, no Unicode text
    holds it; I-JSON, RFC 7493, refuses it)."""
    try:
        text = body.decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text) if text else None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text) and _holds_lone_surrogate(value):
        raise ValueError("a string holds a lone surrogate (a \\ud800-\\udfff escape not in a pair)")
    return value


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in the parsed `value` (a key or a value) cannot be encoded as UTF-8."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode()
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


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
