"""The API's error shape: every documented status ↔ type, refusals carrying their row, the SSE error event."""

from __future__ import annotations

import json

import pytest

from doors._refusal import Refusal
from doors.model._errors import (
    ERROR_TYPES,
    error_body,
    error_headers,
    error_type,
    refusal_body,
    shown,
    sse_error_event,
    status_for,
)

DOCUMENTED = [
    (400, "invalid_request_error"),
    (401, "authentication_error"),
    (402, "billing_error"),
    (403, "permission_error"),
    (404, "not_found_error"),
    (413, "request_too_large"),
    (429, "rate_limit_error"),
    (500, "api_error"),
    (504, "timeout_error"),
    (529, "overloaded_error"),
]


@pytest.mark.parametrize(("status", "kind"), DOCUMENTED)
def test_status_and_type_map_both_ways(status: int, kind: str) -> None:
    assert error_type(status) == kind
    assert status_for(kind) == status


def test_the_table_is_exactly_the_documented_one() -> None:
    assert dict(ERROR_TYPES) == dict(DOCUMENTED)


@pytest.mark.parametrize(("status", "kind"), [(409, "invalid_request_error"), (502, "api_error"),
                                              (503, "api_error"), (418, "invalid_request_error")])
def test_unlisted_statuses_fall_back_by_class(status: int, kind: str) -> None:
    assert error_type(status) == kind


def test_unknown_type_is_a_500() -> None:
    assert status_for("no_such_error") == 500


def test_error_body_is_the_api_shape() -> None:
    body = json.loads(error_body("rate_limit_error", "slow down"))
    assert body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


def test_error_body_carries_details_and_request_id() -> None:
    body = json.loads(error_body("billing_error", "spent", {"error_code": "x"}, request_id="req_1"))
    assert body["error"]["details"] == {"error_code": "x"}
    assert body["request_id"] == "req_1"


def test_refusal_body_names_the_row_who_and_hint() -> None:
    refusal = Refusal(402, "doors.model.budget_microusd", "model", "the budget is spent", "raise the row")
    body = json.loads(refusal_body(refusal, request_id="req_2"))
    assert body["error"]["type"] == "billing_error"
    assert body["error"]["details"] == {"error_code": "doors.model.budget_microusd", "who": "model",
                                        "hint": "raise the row"}
    assert "model refused (doors.model.budget_microusd): the budget is spent" in body["error"]["message"]
    assert body["request_id"] == "req_2"


def test_sse_error_event_is_one_complete_event() -> None:
    event = sse_error_event("overloaded_error", "upstream cut the stream")
    assert event.startswith(b"event: error\ndata: ")
    assert event.endswith(b"\n\n")
    assert event.count(b"\n\n") == 1
    data = json.loads(event.split(b"data: ", 1)[1])
    assert data == {"type": "error", "error": {"type": "overloaded_error", "message": "upstream cut the stream"}}


def test_non_ascii_message_is_utf8_not_escaped() -> None:
    assert "déjà".encode() in error_body("api_error", "déjà")


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 413])
def test_final_statuses_say_do_not_retry(status: int) -> None:
    assert error_headers(status) == (("x-should-retry", "false"),)


def test_overload_says_when_to_retry() -> None:
    assert dict(error_headers(529, retry_after_s=2)) == {"retry-after": "2", "x-should-retry": "true"}
    assert error_headers(500) == ()


def test_shown_quotes_short_values_and_cuts_long_ones() -> None:
    assert shown("abc") == "'abc'"
    assert shown(12) == "12"
    cut = shown("x" * 1000)
    assert cut.startswith("'xxx") and cut.endswith("... (1002 characters)") and len(cut) < 120
