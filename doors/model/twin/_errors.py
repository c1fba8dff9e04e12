"""The API's error shape as the twin answers it. Pure: no I/O.

`{"type": "error", "error": {"type", "message"}, "request_id"}` with the status's error type
(docs.claude.com/en/api/errors). The twin keeps its own small table so that it can run without the door's
modules; it is the provider's table, which the door's `doors.model._errors` also holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ERROR_TYPES = {
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


@dataclass(frozen=True)
class ApiError:
    """An error the twin answers: its status, the API's error type for it, and a message for a person."""

    status: int
    message: str
    retry_after_s: int | None = None

    @property
    def type(self) -> str:
        return ERROR_TYPES[self.status]


def error_object(error: ApiError) -> dict[str, object]:
    """The `{"type": "error", "error": {...}}` value (an SSE `error` event's data, or a body without its id)."""
    return {"type": "error", "error": {"type": error.type, "message": error.message}}


def error_body(error: ApiError, request_id: str) -> bytes:
    """The JSON body of an error response."""
    return json.dumps({**error_object(error), "request_id": request_id}, separators=(",", ":")).encode()


def invalid(message: str) -> ApiError:
    """A 400 invalid_request_error."""
    return ApiError(400, message)
