"""The model door's answers as the Messages API gives them: request ids, refusals, JSON answers. Pure.

A client of the model door is an Anthropic SDK or an agent CLI, not a door client: it reads the API's error
shape (doors/model/_errors.py) and the `request-id` header, and decides whether to retry from the status,
`x-should-retry` and `retry-after`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from doors._http import Response
from doors._refusal import Refusal
from doors.model._errors import error_headers, refusal_body

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
REQUEST_ID_HEADER = "request-id"


def new_request_id() -> str:
    """A request id in the provider's shape (`req_…`), random: it names one call in the audit log."""
    return "req_sh" + secrets.token_urlsafe(18)


def refusal_response(refusal: Refusal, request_id: str, *, retry_after_s: int | None = None,
                     close: bool = False) -> Response:
    """The API-shaped answer to `refusal`: its status, error type, message, and the row as `error_code`."""
    headers = (("content-type", JSON_TYPE), (REQUEST_ID_HEADER, request_id),
               *error_headers(refusal.status, retry_after_s))
    return Response(refusal.status, headers, refusal_body(refusal, request_id=request_id), close=close)


def json_answer(body: bytes, request_id: str, status: int = 200,
                extra: Iterable[tuple[str, str]] = ()) -> Response:
    """A JSON body answered as it is, with the door's request id."""
    return Response(status, (("content-type", JSON_TYPE), (REQUEST_ID_HEADER, request_id), *extra), body)
