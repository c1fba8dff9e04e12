"""Errors in the Messages API's own shape, so SDKs raise their usual classes. Pure: no I/O.

The API answers `{"type": "error", "error": {"type", "message"}, "request_id"}` with a status its clients
map to an exception class (docs.claude.com/en/api/errors); mid-stream it sends the same object as an SSE
`error` event. A door refusal (doors/_refusal.py) is answered in this shape, its row in
`error.details.error_code`, because the client is an unmodified SDK, not the door's own client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from doors._http import json_body
from doors._refusal import Refusal

WHO = "model"
# The manifest rows the model door's refusals name (the schema's `doors.model` object).
ROW_BUDGET = "doors.model.budget_microusd"
ROW_PRICES = "doors.model.prices"
ROW_MODELS = "doors.model.models"
# A request the door cannot read as the Messages API: not a manifest row, the protocol's.
ROW_REQUEST = "model.request"

# status → error.type, as the API documents them; 402 is what an agent CLI stops on without retrying.
ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
STATUSES: Mapping[str, int] = {error_type: status for status, error_type in ERROR_TYPES.items()}

# Statuses an SDK would retry (408, 409, 429, >= 500) that a door answers knowing a retry cannot succeed:
# `x-should-retry: false` is obeyed before the status by the anthropic SDKs (clients-and-tools.md A.1).
_FINAL_STATUSES = frozenset({400, 401, 402, 403, 404, 413})


def shown(value: object, limit: int = 80) -> str:
    """`value` as a refusal may quote it: its repr, cut to `limit` characters (a client's value may be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def error_type(status: int) -> str:
    """The API's `error.type` for an HTTP status (unlisted: `api_error` from 500 up, else invalid_request_error)."""
    if status in ERROR_TYPES:
        return ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def status_for(error_type_name: str) -> int:
    """The HTTP status for an API `error.type` (an unknown type is a 500 `api_error`)."""
    return STATUSES.get(error_type_name, 500)


def error_object(error_type_name: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `{"type": "error", "error": {...}}` object; `details` goes in `error.details` when given."""
    inner: dict[str, Any] = {"type": error_type_name, "message": message}
    if details:
        inner["details"] = dict(details)
    return {"type": "error", "error": inner}


def error_body(error_type_name: str, message: str, details: Mapping[str, Any] | None = None, *,
               request_id: str | None = None) -> bytes:
    """The API's error body as compact UTF-8 JSON (with `request_id` when the door has one)."""
    shape = error_object(error_type_name, message, details)
    if request_id is not None:
        shape["request_id"] = request_id
    return json_body(shape)


def sse_error_event(error_type_name: str, message: str) -> bytes:
    """An SSE `error` event: how a stream that cannot finish ends, so the client does not take it as complete."""
    return b"event: error\ndata: " + json_body(error_object(error_type_name, message)) + b"\n\n"


def refusal_message(refusal: Refusal) -> str:
    """One sentence for a person: who refused, what, and what to change."""
    return f"{refusal.who} refused ({refusal.row}): {refusal.detail} (hint: {refusal.hint})"


def refusal_body(refusal: Refusal, *, request_id: str | None = None) -> bytes:
    """A door refusal in the API's shape: `error.details` names the row (`error_code`), who and the hint."""
    details = {"error_code": refusal.row, "who": refusal.who, "hint": refusal.hint}
    return error_body(error_type(refusal.status), refusal_message(refusal), details, request_id=request_id)


def error_headers(status: int, retry_after_s: int | None = None) -> tuple[tuple[str, str], ...]:
    """Headers that tell an SDK whether to retry: `x-should-retry: false` when it cannot help, else `retry-after`."""
    if status in _FINAL_STATUSES:
        return (("x-should-retry", "false"),)
    if retry_after_s is not None:
        return (("retry-after", str(retry_after_s)), ("x-should-retry", "true"))
    return ()
