"""The model door's answers in the Messages API's own shape: request ids, error bodies, SSE error events. Pure.

A client of the model door is an Anthropic SDK or an agent CLI, not a door client: it reads
`{"type":"error","error":{"type","message"}}` and the `request-id` header, and picks its retry behaviour from
the status, `x-should-retry` and `retry-after`. The door's own `who` and `hint` ride in `error.details`, beside
`error_code`, which names the manifest row (or protocol row) that refused.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from doors._http import Response
from doors._refusal import Refusal
from doors.model._errors import error_body, error_type

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
REQUEST_ID_HEADER = "request-id"
# Statuses after which a retry cannot succeed in this session: the SDKs and Claude Code stop at once on
# `x-should-retry: false` (notes A.1, A.2), where a plain 429 makes them retry for minutes.
NO_RETRY_STATUSES = frozenset({400, 401, 402, 403, 404, 413})


def new_request_id() -> str:
    """A request id in the provider's shape (`req_…`), random: it names one call in the audit log."""
    return "req_sh" + secrets.token_urlsafe(18)


def refusal_response(refusal: Refusal, request_id: str, *, retry_after_s: int | None = None,
                     close: bool = False, extra: Iterable[tuple[str, str]] = ()) -> Response:
    """The API-shaped answer to `refusal`: its status, error type, message, and the row as `error_code`."""
    details = {"error_code": refusal.row, "who": refusal.who, "hint": refusal.hint}
    body = error_body(error_type(refusal.status), str(refusal.detail), details)
    headers = [("content-type", JSON_TYPE), (REQUEST_ID_HEADER, request_id)]
    if refusal.status in NO_RETRY_STATUSES:
        headers.append(("x-should-retry", "false"))
    if retry_after_s is not None:
        headers.append(("retry-after", str(retry_after_s)))
    return Response(refusal.status, (*headers, *extra), body, close=close)


def json_answer(body: bytes, request_id: str, status: int = 200,
                extra: Iterable[tuple[str, str]] = ()) -> Response:
    """A JSON body answered as it is, with the door's request id."""
    return Response(status, (("content-type", JSON_TYPE), (REQUEST_ID_HEADER, request_id), *extra), body)
