"""Request shaping: the header allowlist, gzip with a cap, request checks, and what a call reserves."""

from __future__ import annotations

import gzip
import json
import math
import tracemalloc
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doors._refusal import Refusal
from doors.model._errors import error_type
from doors.model._prices import SHIPPED_PRICES, Price, cost_microusd, price_table
from doors.model._shape import (
    CallPlan,
    decoded_body,
    estimate_input_tokens,
    forward_headers,
    listed_models,
    model_price,
    plan_call,
    read_request,
)
from doors.model._usage import Usage

SONNET = SHIPPED_PRICES["claude-sonnet-4-5"]  # µUSD/token: 3 in, 3.75 5m, 6 1h, 0.3 read, 15 out
HAIKU_55 = SHIPPED_PRICES["claude-haiku-5-5"]


def refused(value: object, status: int, row: str) -> Refusal:
    assert isinstance(value, Refusal), value
    assert (value.status, value.row, value.who) == (status, row, "model")
    return value


# -- headers ----------------------------------------------------------------------------------------------------

CLIENT_HEADERS = [
    (b"Host", b"127.0.0.1:4000"),
    (b"x-api-key", b"sk-placeholder-1"),
    (b"X-Api-Key", b"sk-placeholder-2"),
    (b"Authorization", b"Bearer sk-placeholder-3"),
    (b"Proxy-Authorization", b"Basic cGxhY2Vob2xkZXI="),
    (b"Cookie", b"session=placeholder-4"),
    (b"anthropic-version", b"2023-06-01"),
    (b"Anthropic-Beta", b"claude-code-20250219,interleaved-thinking-2025-05-14"),
    (b"anthropic-beta", b" effort-2025-11-24 "),
    (b"Content-Type", b"application/json; charset=utf-8"),
    (b"Content-Length", b"49152"),
    (b"Content-Encoding", b"gzip"),
    (b"Connection", b"keep-alive, x-api-key"),
    (b"Keep-Alive", b"timeout=5"),
    (b"Transfer-Encoding", b"chunked"),
    (b"TE", b"trailers"),
    (b"Trailer", b"x-api-key"),
    (b"Upgrade", b"h2c"),
    (b"Proxy-Connection", b"keep-alive"),
    (b"Accept-Encoding", b"gzip, deflate, br, zstd"),
    (b"User-Agent", b"claude-cli/2.1.328"),
    (b"x-app", b"cli"),
    (b"X-Stainless-Retry-Count", b"0"),
    (b"X-Claude-Code-Session-Id", b"placeholder-5"),
    (b"anthropic-dangerous-direct-browser-access", b"true"),
    (b"x-forwarded-for", b"10.0.0.1"),
]


def test_only_version_beta_and_content_type_are_forwarded_byte_for_byte() -> None:
    assert forward_headers(CLIENT_HEADERS) == (
        (b"anthropic-version", b"2023-06-01"),
        (b"anthropic-beta", b"claude-code-20250219,interleaved-thinking-2025-05-14"),
        (b"anthropic-beta", b" effort-2025-11-24 "),
        (b"content-type", b"application/json; charset=utf-8"),
    )


def test_no_credential_the_client_sent_is_forwarded() -> None:
    forwarded = b"\n".join(name + b":" + value for name, value in forward_headers(CLIENT_HEADERS))
    assert b"placeholder" not in forwarded and b"sk-" not in forwarded
    assert not {name for name, _ in forward_headers(CLIENT_HEADERS)} & {
        b"x-api-key", b"authorization", b"cookie", b"proxy-authorization", b"host", b"connection"}


# -- gzip -------------------------------------------------------------------------------------------------------

GZ = [(b"content-encoding", b"gzip")]
BODY = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 10, "messages": []}).encode()


@pytest.mark.parametrize("headers", [[], [(b"Content-Encoding", b"identity")], [(b"content-encoding", b"")]])
def test_identity_bodies_pass(headers: list[tuple[bytes, bytes]]) -> None:
    assert decoded_body(headers, BODY) == BODY


@pytest.mark.parametrize("coding", [b"gzip", b"GZIP", b"x-gzip", b" gzip ", b"identity, gzip"])
def test_gzip_bodies_are_inflated(coding: bytes) -> None:
    assert decoded_body([(b"Content-Encoding", coding)], gzip.compress(BODY)) == BODY


def test_a_body_at_the_cap_passes_and_one_byte_more_is_413() -> None:
    assert decoded_body([], b"x" * 100, cap=100) == b"x" * 100
    refused(decoded_body([], b"x" * 101, cap=100), 413, "model.request")
    assert decoded_body(GZ, gzip.compress(b"x" * 100), cap=100) == b"x" * 100
    refused(decoded_body(GZ, gzip.compress(b"x" * 101), cap=100), 413, "model.request")


def test_a_zip_bomb_is_refused_before_it_inflates_past_the_cap() -> None:
    bomb = gzip.compress(bytes(64 << 20), compresslevel=9)  # 64 MiB of zeros in ~64 KiB
    cap = 1 << 20
    tracemalloc.start()
    try:
        verdict = decoded_body(GZ, bomb, cap=cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    refusal = refused(verdict, 413, "model.request")
    assert error_type(refusal.status) == "request_too_large"
    assert peak < 3 * cap


@pytest.mark.parametrize(("headers", "body", "detail"), [
    ([(b"content-encoding", b"br")], BODY, "'br' is not accepted"),
    ([(b"content-encoding", b"deflate")], BODY, "'deflate' is not accepted"),
    ([(b"content-encoding", b"gzip, gzip")], gzip.compress(gzip.compress(BODY)), "'gzip, gzip'"),
    ([(b"content-encoding", b"gzip"), (b"content-encoding", b"gzip")], BODY, "'gzip, gzip'"),
    (GZ, BODY, "corrupt"),
    (GZ, gzip.compress(BODY)[:-4], "truncated"),
    (GZ, b"", "truncated"),
    (GZ, gzip.compress(BODY) + b"junk", "follow"),
    (GZ, gzip.compress(BODY) + gzip.compress(BODY), "follow"),
])
def test_bad_encodings_are_400(headers: list[tuple[bytes, bytes]], body: bytes, detail: str) -> None:
    refusal = refused(decoded_body(headers, body), 400, "model.request")
    assert detail in refusal.detail


# -- the request ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "detail"), [
    (b"", "not JSON"),
    (b"{", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b'{"model": "m", "max_tokens": NaN}', "NaN is not JSON"),
    (b'{"model": "m", "max_tokens": Infinity}', "Infinity is not JSON"),
    (b'{"model": "m", "max_tokens": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    (b"[]", "JSON array, not an object"),
    (b'"hi"', "JSON string"),
    (b"null", "JSON null"),
    (b"3", "JSON number"),
    (b'{"max_tokens": 10}', "model: a model name is required"),
    (b'{"model": "", "max_tokens": 10}', "model: a model name"),
    (b'{"model": ["m"], "max_tokens": 10}', "model: a model name"),
    (b'{"model": "m"}', "max_tokens: None"),
    (b'{"model": "m", "max_tokens": 0}', "max_tokens: 0"),
    (b'{"model": "m", "max_tokens": -5}', "max_tokens: -5"),
    (b'{"model": "m", "max_tokens": 1.5}', "max_tokens: 1.5"),
    (b'{"model": "m", "max_tokens": 1e400}', "max_tokens: inf"),
    (b'{"model": "m", "max_tokens": "10"}', "max_tokens: '10'"),
    (b'{"model": "m", "max_tokens": true}', "max_tokens: True"),
    (b'{"model": "m", "max_tokens": 10, "stream": "yes"}', "stream: 'yes'"),
    (b'{"model": "m", "max_tokens": "' + b"x" * 100_000 + b'"}', "... (100002 characters)"),
])
def test_bad_requests_are_400_in_the_api_shape(body: bytes, detail: str) -> None:
    refusal = refused(read_request(body, "messages"), 400, "model.request")
    assert detail in refusal.detail
    assert error_type(refusal.status) == "invalid_request_error"


def test_a_good_request() -> None:
    assert read_request(BODY, "messages") == json.loads(BODY)
    assert read_request(b'{"model": "m", "max_tokens": 1, "stream": true}', "messages")


def test_count_tokens_needs_a_model_but_no_max_tokens() -> None:
    assert read_request(b'{"model": "m", "messages": []}', "count_tokens") == {"model": "m", "messages": []}
    refused(read_request(b'{"messages": []}', "count_tokens"), 400, "model.request")


def test_a_duplicate_key_is_forwarded_once_as_it_was_checked() -> None:
    request = read_request(b'{"model": "m", "max_tokens": 100000, "max_tokens": 10}', "messages")
    assert isinstance(request, dict)
    plan = plan_call(request, SONNET, 10**9, 10, floor_tokens=1)
    assert isinstance(plan, CallPlan)
    assert plan.forward_body.count(b"max_tokens") == 1 and json.loads(plan.forward_body)["max_tokens"] == 10


# -- models -----------------------------------------------------------------------------------------------------

def test_a_huge_model_name_is_not_echoed_whole() -> None:
    refusal = refused(model_price("m" * 100_000, frozenset({"claude-haiku-4-5"}), SHIPPED_PRICES), 404,
                      "doors.model.models")
    assert len(refusal.detail) + len(refusal.hint) < 400


def test_the_models_row() -> None:
    assert model_price("claude-haiku-4-5", None, SHIPPED_PRICES) == SHIPPED_PRICES["claude-haiku-4-5"]
    allowed = frozenset({"claude-haiku-4-5", "my-model"})
    assert model_price("claude-haiku-4-5-20251001", allowed, SHIPPED_PRICES) == SHIPPED_PRICES["claude-haiku-4-5"]
    refusal = refused(model_price("claude-opus-5-5", allowed, SHIPPED_PRICES), 404, "doors.model.models")
    assert "claude-opus-5-5" in refusal.detail and "doors.model.models" in refusal.hint
    refused(model_price("claude-haiku-4-5", frozenset({"claude-haiku-4-5-20251001"}), SHIPPED_PRICES),
            404, "doors.model.models")
    refused(model_price("my-model", allowed, SHIPPED_PRICES), 404, "doors.model.prices")


def test_listed_models_are_the_allowed_priced_ones() -> None:
    assert listed_models(frozenset({"my-model", "claude-haiku-4-5"}), SHIPPED_PRICES) == ["claude-haiku-4-5"]
    assert listed_models(None, SHIPPED_PRICES) == sorted(SHIPPED_PRICES)


def test_estimate_is_the_bytes_plus_the_api_overhead() -> None:
    assert estimate_input_tokens(b"x" * 100) == 1124


# -- plan_call --------------------------------------------------------------------------------------------------

def request(max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": max_tokens, "messages": [{"role": "user", "content": "é"}],
            **extra}


@pytest.mark.parametrize(("remaining", "requested", "floor", "max_tokens", "reserve"), [
    (10**9, 4096, 1024, 4096, 1000 * 6 + 4096 * 15),  # the budget pays for all of it
    (6000 + 2000 * 15, 4096, 1024, 2000, 36_000),  # lowered to what remains
    (6000 + 2000 * 15 + 14, 4096, 1024, 2000, 36_000),  # a part of a token does not count
    (6000 + 1024 * 15, 4096, 1024, 1024, 6000 + 1024 * 15),  # exactly the floor
    (6000 + 10 * 15, 10, 1024, 10, 6150),  # asked for less than the floor, and it is paid for
    (6000 + 4096 * 15, 4096, 1024, 4096, 6000 + 4096 * 15),
])
def test_plans(remaining: int, requested: int, floor: int, max_tokens: int, reserve: int) -> None:
    plan = plan_call(request(requested), SONNET, remaining, 1000, floor)
    assert isinstance(plan, CallPlan)
    assert (plan.max_tokens, plan.reserve_microusd, plan.requested_max_tokens) == (max_tokens, reserve, requested)
    assert plan.lowered == (max_tokens < requested)
    assert plan.reserve_microusd <= remaining
    assert json.loads(plan.forward_body) == request(max_tokens)


@pytest.mark.parametrize(("remaining", "requested", "floor"), [
    (6000 + 1023 * 15, 4096, 1024),  # one token under the floor
    (6000 + 9 * 15, 10, 1024),  # asked for 10, only 9 paid for
    (5999, 4096, 1),  # not even the input
    (0, 4096, 1),
    (-50, 4096, 1),
])
def test_below_the_floor_is_402_naming_the_budget_row(remaining: int, requested: int, floor: int) -> None:
    refusal = refused(plan_call(request(requested), SONNET, remaining, 1000, floor), 402, "doors.model.budget_microusd")
    assert error_type(refusal.status) == "billing_error"
    assert "doors.model.budget_microusd" in refusal.hint
    assert f"{max(0, remaining)} µUSD left" in refusal.detail


def test_the_input_is_reserved_at_the_1h_write_rate_in_its_band() -> None:
    plan = plan_call(request(100, model="claude-haiku-5-5"), HAIKU_55, 10**9, 100_000, 1)
    assert isinstance(plan, CallPlan) and plan.reserve_microusd == 100_000 * Fraction(1, 5) + 100 * Fraction(1, 2)
    plan = plan_call(request(100, model="claude-haiku-5-5"), HAIKU_55, 10**9, 100_001, 1)
    assert isinstance(plan, CallPlan) and plan.reserve_microusd == 100_001 * 1 + 100 * Fraction(5, 2)


def test_a_free_output_rate_still_reserves_the_input() -> None:
    free_output = price_table({"m": {"input": 1000, "cache_write_5m": 1000, "cache_write_1h": 1000,
                                     "cache_read": 1000, "output": 0}})["m"]
    plan = plan_call(request(50_000), free_output, 1000, 1000, 1024)
    assert isinstance(plan, CallPlan) and (plan.max_tokens, plan.reserve_microusd) == (50_000, 1000)
    refused(plan_call(request(50_000), free_output, 999, 1000, 1024), 402, "doors.model.budget_microusd")


@pytest.mark.parametrize(("thinking", "remaining_tokens", "max_tokens", "forwarded", "budget"), [
    ({"type": "enabled", "budget_tokens": 8000}, 5000, 5000, {"type": "enabled", "budget_tokens": 4999}, 4999),
    ({"type": "enabled", "budget_tokens": 2000}, 5000, 5000, {"type": "enabled", "budget_tokens": 2000}, 2000),
    ({"type": "enabled", "budget_tokens": 1025}, 1026, 1026, {"type": "enabled", "budget_tokens": 1025}, 1025),
    # not lowered: the client's own budget_tokens is left alone (interleaved thinking may exceed max_tokens)
    ({"type": "enabled", "budget_tokens": 20000}, 10**6, 16000, {"type": "enabled", "budget_tokens": 20000}, 20000),
    ({"type": "adaptive", "display": "omitted"}, 5000, 5000, {"type": "adaptive", "display": "omitted"}, None),
    ({"type": "disabled"}, 5000, 5000, {"type": "disabled"}, None),
])
def test_thinking_budget_kept_below_max_tokens(thinking: dict[str, Any], remaining_tokens: int, max_tokens: int,
                                               forwarded: dict[str, Any], budget: int | None) -> None:
    plan = plan_call(request(16000, thinking=thinking), SONNET, 6000 + remaining_tokens * 15, 1000, 1024)
    assert isinstance(plan, CallPlan)
    assert (plan.max_tokens, plan.thinking_budget) == (max_tokens, budget)
    assert json.loads(plan.forward_body)["thinking"] == forwarded


def test_thinking_that_cannot_fit_is_402() -> None:
    thinking = {"type": "enabled", "budget_tokens": 8000}
    refusal = refused(plan_call(request(16000, thinking=thinking), SONNET, 6000 + 1024 * 15, 1000, 1024),
                      402, "doors.model.budget_microusd")
    assert "too few for thinking" in refusal.detail


@pytest.mark.parametrize("budget", [None, "8000", 0, True, 2.5])
def test_a_bad_thinking_budget_is_400(budget: object) -> None:
    thinking = {"type": "enabled", "budget_tokens": budget}
    refused(plan_call(request(16000, thinking=thinking), SONNET, 10**9, 1000, 1024), 400, "model.request")


def test_the_forwarded_body_keeps_everything_else_in_order() -> None:
    body = {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "sys",
                                                      "cache_control": {"type": "ephemeral"}}],
            "max_tokens": 128_000, "stream": True, "metadata": {"user_id": "{\"a\": 1}"}, "messages": []}
    plan = plan_call(body, SONNET, 6000 + 2000 * 15, 1000, 1024)
    assert isinstance(plan, CallPlan)
    assert list(json.loads(plan.forward_body)) == list(body)
    assert json.loads(plan.forward_body) == {**body, "max_tokens": 2000}


def test_a_lone_surrogate_still_encodes() -> None:
    body = read_request(b'{"model": "m", "max_tokens": 5, "messages": [{"content": "\\ud800 \xc3\xa9"}]}', "messages")
    assert isinstance(body, dict)
    plan = plan_call(body, SONNET, 10**9, 10, 1)
    assert isinstance(plan, CallPlan) and json.loads(plan.forward_body) == body


@given(remaining=st.integers(-1000, 5 * 10**6), estimate=st.integers(0, 300_000), requested=st.integers(1, 200_000),
       floor=st.integers(1, 4096), model=st.sampled_from(sorted(SHIPPED_PRICES)), split=st.tuples(
           st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)),
       max_uses=st.none() | st.integers(1, 30), search=st.booleans())
def test_whatever_the_call_uses_within_its_plan_costs_at_most_its_reservation(
        remaining: int, estimate: int, requested: int, floor: int, model: str,
        split: tuple[float, float, float, float], max_uses: int | None, search: bool) -> None:
    price: Price = SHIPPED_PRICES[model]
    tool: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search"}
    tool.update({} if max_uses is None else {"max_uses": max_uses})
    plan = plan_call(request(requested, tools=[tool] if search else []), price, remaining, estimate, floor)
    if isinstance(plan, Refusal):
        assert plan.status == 402
        return
    assert plan.reserve_microusd <= remaining
    assert min(floor, requested) <= plan.max_tokens <= requested
    # any prompt of at most `estimate` tokens, split over the kinds any way, and at most max_tokens of output
    cuts = sorted(int(estimate * share) for share in split)
    kinds = [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], cuts[3] - cuts[2]]
    searches = json.loads(plan.forward_body)["tools"][0]["max_uses"] if search else 0
    usage = Usage(kinds[0], kinds[1], kinds[2], kinds[3], plan.max_tokens, searches)
    assert cost_microusd(usage, price) <= plan.reserve_microusd


# -- web search -------------------------------------------------------------------------------------------------

SEARCH = {"type": "web_search_20250305", "name": "web_search"}
FETCH = {"type": "web_fetch_20250910", "name": "web_fetch"}
CUSTOM = {"name": "read_file", "input_schema": {"type": "object"}}
ONE_CALL = 1000 * 6 + 4096 * 15  # 1000 input tokens at the 1h rate, 4096 output tokens


@pytest.mark.parametrize(("tools", "remaining", "uses", "max_tokens"), [
    ([CUSTOM, {**SEARCH, "max_uses": 3}, FETCH], 10**9, [3], 4096),
    ([SEARCH], 10**9, [10], 4096),  # no max_uses: the door caps it
    ([{**SEARCH, "max_uses": 4}], ONE_CALL + 4 * 10_000, [4], 4096),  # 4 searches and all the output
    # the floor's output comes first, then searches, then the rest of the output
    ([SEARCH], ONE_CALL + 4 * 10_000, [8], 1429),
    ([SEARCH], 6000 + 1024 * 15 + 2 * 10_000 + 9_999, [2], 1024 + 666),
    ([{**SEARCH, "max_uses": 2}, {**SEARCH, "max_uses": 5}], ONE_CALL + 4 * 10_000, [2, 5], 2096),
    ([{**SEARCH, "max_uses": 7}, {**SEARCH, "max_uses": 5}], ONE_CALL + 4 * 10_000, [7, 1], 1429),
])
def test_web_search_uses_are_reserved_and_capped(tools: list[dict[str, Any]], remaining: int, uses: list[int],
                                                 max_tokens: int) -> None:
    plan = plan_call(request(4096, tools=tools), SONNET, remaining, 1000, 1024)
    assert isinstance(plan, CallPlan)
    forwarded = json.loads(plan.forward_body)["tools"]
    assert [tool["max_uses"] for tool in forwarded if tool.get("type", "").startswith("web_search_")] == uses
    assert [tool for tool in forwarded if not tool.get("type", "").startswith("web_search_")] == [
        tool for tool in tools if not tool.get("type", "").startswith("web_search_")]
    assert plan.max_tokens == max_tokens
    assert plan.reserve_microusd == math.ceil(6000 + max_tokens * 15) + sum(uses) * 10_000 <= remaining


def test_no_search_tool_leaves_the_tools_as_they_were() -> None:
    plan = plan_call(request(4096, tools=[CUSTOM, FETCH]), SONNET, 10**9, 1000, 1024)
    assert isinstance(plan, CallPlan) and json.loads(plan.forward_body)["tools"] == [CUSTOM, FETCH]


def test_a_budget_that_cannot_pay_one_search_is_402() -> None:
    refusal = refused(plan_call(request(4096, tools=[SEARCH]), SONNET, 6000 + 1024 * 15 + 9_999, 1000, 1024),
                      402, "doors.model.budget_microusd")
    assert "web search" in refusal.detail


@pytest.mark.parametrize("max_uses", [0, -1, "3", True, 1.5])
def test_a_bad_max_uses_is_400(max_uses: object) -> None:
    refused(plan_call(request(4096, tools=[{**SEARCH, "max_uses": max_uses}]), SONNET, 10**9, 1000, 1024),
            400, "model.request")
