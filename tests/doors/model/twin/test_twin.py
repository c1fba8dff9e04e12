"""The twin's answers in process: routes, the API's refusals, faults, cache usage, determinism, pacing."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from doors.model._upstream import UpstreamRequest
from doors.model.twin import TWIN_NAME, Answer, Twin, TwinScript, TwinUpstream

VERSION = ((b"anthropic-version", b"2023-06-01"),)


def _body(text: str = "hello", **fields: Any) -> bytes:
    return json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 64,
                       "messages": [{"role": "user", "content": text}], **fields}).encode()


def _post(twin: Twin, body: bytes, path: bytes = b"/v1/messages", headers: Any = VERSION) -> Answer:
    return twin.answer(b"POST", path, headers, body)


def _error(answer: Answer) -> tuple[int, str, str]:
    body = json.loads(answer.body)
    assert body["type"] == "error" and body["request_id"] == dict(answer.headers)[b"request-id"].decode()
    assert dict(answer.headers)[b"content-type"] == b"application/json"
    return answer.status, body["error"]["type"], body["error"]["message"]


def _events(answer: Answer) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for piece in answer.pieces:
        name, data = piece.decode().removesuffix("\n\n").split("\n")
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


@pytest.mark.parametrize(("body", "headers", "status", "error_type", "message"), [
    (_body(), (), 400, "invalid_request_error", "anthropic-version"),
    (b"{not json", VERSION, 400, "invalid_request_error", "not valid JSON"),
    (b"[1]", VERSION, 400, "invalid_request_error", "JSON object"),
    (b"[" * 100_000, VERSION, 400, "invalid_request_error", "not valid JSON"),
    (json.dumps({"max_tokens": 5, "messages": []}).encode(), VERSION, 400, "invalid_request_error", "model"),
    (json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode(), VERSION, 400,
     "invalid_request_error", "max_tokens: Field required"),
    (_body(max_tokens=0), VERSION, 400, "invalid_request_error", "max_tokens"),
    (_body(max_tokens=True), VERSION, 400, "invalid_request_error", "max_tokens"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": []}).encode(), VERSION, 400, "invalid_request_error",
     "messages"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}).encode(),
     VERSION, 400, "invalid_request_error", "messages.0.role"),
    (json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": 5}]}).encode(),
     VERSION, 400, "invalid_request_error", "messages.0.content"),
    (_body(stream="yes"), VERSION, 400, "invalid_request_error", "stream"),
    (_body(stop_sequences=[""]), VERSION, 400, "invalid_request_error", "stop_sequences"),
])
def test_refused_like_the_api(body: bytes, headers: Any, status: int, error_type: str, message: str) -> None:
    got = _error(_post(Twin(), body, headers=headers))
    assert got[:2] == (status, error_type)
    assert message in got[2]


@pytest.mark.parametrize(("method", "path"), [
    (b"GET", b"/v1/messages"), (b"POST", b"/v1/complete"), (b"DELETE", b"/v1/models"), (b"GET", b"/"),
    (b"GET", b"/v1/models/claude-nope"),
])
def test_unknown_routes_are_not_found(method: bytes, path: bytes) -> None:
    assert _error(Twin().answer(method, path, VERSION, b""))[:2] == (404, "not_found_error")


def test_models_list_and_one() -> None:
    twin = Twin(TwinScript.parse({"twin": "twin-script/v0", "models": ["a", "b"]}))
    page = json.loads(twin.answer(b"GET", b"/v1/models", (), b"").body)
    assert [model["id"] for model in page["data"]] == ["a", "b"]
    assert (page["has_more"], page["first_id"], page["last_id"]) == (False, "a", "b")
    assert json.loads(twin.answer(b"GET", b"/v1/models/b", (), b"").body)["type"] == "model"


def test_count_tokens_counts_the_prompt_and_needs_no_max_tokens() -> None:
    body = json.dumps({"model": "m", "system": "abcd", "messages": [{"role": "user", "content": "abcdefgh"}]})
    answer = _post(Twin(), body.encode(), b"/v1/messages/count_tokens")
    assert (answer.status, json.loads(answer.body)) == (200, {"input_tokens": 3})


def test_the_same_requests_give_the_same_bytes() -> None:
    one, two = Twin(), Twin()
    for body in (_body(), _body("again", stream=True), _body("[twin:429]")):
        first, second = _post(one, body), _post(two, body)
        assert (first.status, first.headers, first.pieces) == (second.status, second.headers, second.pieces)


def test_injected_statuses_carry_the_api_shape() -> None:
    assert _error(_post(Twin(), _body("[twin:529]")))[:2] == (529, "overloaded_error")
    rate = _post(Twin(), _body("[twin:429]", stream=True))
    assert _error(rate)[:2] == (429, "rate_limit_error")
    assert dict(rate.headers)[b"retry-after"] == b"1"
    assert dict(_post(Twin(), _body("[twin:429][twin:retry_after=7]")).headers)[b"retry-after"] == b"7"
    assert b"retry-after" not in dict(_post(Twin(), _body("[twin:529]")).headers)


def test_a_cut_stream_stops_after_its_events_without_an_end() -> None:
    answer = _post(Twin(), _body("[twin:cut=3]", stream=True))
    assert not answer.complete
    assert [name for name, _ in _events(answer)] == ["message_start", "content_block_start", "ping"]


def test_a_cut_json_reply_stops_halfway() -> None:
    answer = _post(Twin(), _body("[twin:cut=1]"))
    assert not answer.complete
    with pytest.raises(ValueError):
        json.loads(answer.body)


def test_an_error_event_ends_the_stream() -> None:
    answer = _post(Twin(), _body("[twin:error=2]", stream=True))
    events = _events(answer)
    assert answer.complete and [name for name, _ in events] == ["message_start", "content_block_start", "error"]
    assert events[-1][1] == {"type": "error", "error": {"type": "overloaded_error",
                                                         "message": "twin: injected overloaded_error mid-stream"}}


def test_a_repeated_cached_prefix_is_read_from_the_cache() -> None:
    system = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    twin = Twin()
    first = json.loads(_post(twin, _body(system=system)).body)["usage"]
    second = json.loads(_post(twin, _body("other", system=system)).body)["usage"]
    assert (first["cache_creation"]["ephemeral_1h_input_tokens"], first["cache_read_input_tokens"]) == (100, 0)
    assert (second["cache_creation_input_tokens"], second["cache_read_input_tokens"]) == (0, 100)
    assert (first["input_tokens"], second["input_tokens"]) == (2, 2)


def test_max_tokens_is_what_the_twin_obeys() -> None:
    answer = json.loads(_post(Twin(), _body("x" * 100, max_tokens=3)).body)
    assert (answer["stop_reason"], answer["usage"]["output_tokens"]) == ("max_tokens", 3)


def test_statistics_count_what_was_answered() -> None:
    twin = Twin()
    for body in (_body(), _body(stream=True), _body("[twin:529]"), b"{"):
        _post(twin, body)
    stats = twin.statistics()
    assert (stats.requests, stats.messages, stats.streams, stats.faults) == (4, 3, 1, 1)


async def test_upstream_exchange_streams_the_answer() -> None:
    upstream = TwinUpstream()
    assert upstream.name == TWIN_NAME == "sharness.model.anthropic.twin"
    response = await upstream.exchange(UpstreamRequest(b"POST", b"/v1/messages", VERSION, _body(stream=True)))
    assert response.status == 200
    pieces = [piece async for piece in response.body]
    await upstream.aclose_response(response)
    assert pieces == list(_post(Twin(), _body(stream=True)).pieces)


async def test_upstream_response_closed_midway_stops_its_body() -> None:
    upstream = TwinUpstream()
    response = await upstream.exchange(UpstreamRequest(b"POST", b"/v1/messages", VERSION, _body(stream=True)))
    await anext(aiter(response.body))
    await upstream.aclose_response(response)
    assert [piece async for piece in response.body] == []


async def test_a_slow_stream_pauses_before_each_event_but_the_first(autojump_clock: trio.testing.MockClock) -> None:
    upstream = TwinUpstream()
    response = await upstream.exchange(UpstreamRequest(b"POST", b"/v1/messages", VERSION,
                                                       _body("[twin:slow=250]", stream=True)))
    arrivals = []
    start = trio.current_time()
    async for _ in response.body:
        arrivals.append(round(trio.current_time() - start, 6))
    assert arrivals == [0.25 * index for index in range(len(arrivals))]  # the mock clock: exact, not timed



def test_a_tokens_marker_asks_for_a_reply_of_that_length() -> None:
    capped = json.loads(_post(Twin(), _body("[twin:tokens=100000]", max_tokens=1000)).body)
    assert (capped["stop_reason"], capped["usage"]["output_tokens"]) == ("max_tokens", 1000)
    assert capped["content"][0]["text"] == "twin" * 1000
    streamed = _post(Twin(), _body("[twin:tokens=10000]", max_tokens=20000, stream=True))
    deltas = [data for name, data in _events(streamed) if name == "content_block_delta"]
    assert len(deltas) == 10000 and _events(streamed)[-2][1]["usage"]["output_tokens"] == 10000


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                max_size=4),
                    max_leaves=30)
BLOCK = JSON | st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "tool_use", "tool_result"])},
                                     optional={"text": JSON | st.text(), "cache_control": JSON, "input": JSON})
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                 "content": st.text() | st.lists(BLOCK, max_size=3) | JSON})
# A valid request with any field junk or missing: each check must answer 400 or let a request through that
# the rest of the twin can take
BODY = st.fixed_dictionaries(
    {"model": st.just("m"), "max_tokens": st.integers(1, 50) | JSON,
     "messages": st.lists(MESSAGE, min_size=1, max_size=3)},
    optional={"stream": st.booleans() | JSON, "system": st.text() | st.lists(BLOCK, max_size=2) | JSON,
              "tools": st.lists(BLOCK, max_size=2) | JSON, "stop_sequences": st.lists(st.text(), max_size=2) | JSON,
              "thinking": JSON | st.just({"type": "enabled", "budget_tokens": 10})})


@settings(max_examples=500, deadline=None)
@given(BODY, st.sampled_from([b"/v1/messages", b"/v1/messages/count_tokens"]))
def test_any_json_body_gets_an_answer_never_an_exception(body: dict[str, Any], path: bytes) -> None:
    answer = _post(Twin(), json.dumps(body).encode(), path)
    assert answer.status in (200, 400)
    if answer.status == 400:
        assert _error(answer)[1] == "invalid_request_error"
