"""The errors the twin answers, in the API's shape: the door's table and shape (`doors.model._errors`), reused.

`ApiError` is the twin's record of one: its status, a message for a person, and the `retry-after` it carries.
"""

from __future__ import annotations

from dataclasses import dataclass

from doors.model import _errors as api

ERROR_TYPES = api.ERROR_TYPES  # status -> error.type: the statuses a script may inject


@dataclass(frozen=True)
class ApiError:
    """An error the twin answers: its status, the API's error type for it, and a message for a person."""

    status: int
    message: str
    retry_after_s: int | None = None

    @property
    def type(self) -> str:
        return api.error_type(self.status)


def error_object(error: ApiError) -> dict[str, object]:
    """The `{"type": "error", "error": {...}}` value (an SSE `error` event's data)."""
    return api.error_object(error.type, error.message)


def error_body(error: ApiError, request_id: str) -> bytes:
    """The JSON body of an error response."""
    return api.error_body(error.type, error.message, request_id=request_id)


def invalid(message: str) -> ApiError:
    """A 400 invalid_request_error."""
    return ApiError(400, message)
