"""The stream's event sequence and the non-streamed message, as tables: every event type, indices, usage,
stop reasons. Sans-IO: compose and stream_events only."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from doors.model._usage import Usage
from doors.model.twin import Block, Reply
from doors.model.twin._compose import compose
from doors.model.twin._events import message_object, sse, stream_events
from doors.model.twin._request import MessagesCall

USAGE = Usage(input_tokens=7, cache_creation_5m=3, cache_creation_1h=2, cache_read=5, output_tokens=0)


def _call(max_tokens: int = 100, stops: tuple[str, ...] = (), thinking: bool = False, text: str = "hi") -> MessagesCall:
    return MessagesCall({}, "claude-x", max_tokens, True, text, stops, thinking)


def _events(reply: Reply, call: MessagesCall, **kw: Any) -> list[tuple[str, dict[str, Any]]]:
    composed = compose(reply, call, "toolu_t")
    usage = replace(USAGE, output_tokens=composed.output_tokens)
    return stream_events("msg_t", call.model, composed, usage, **kw)


def _shape(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each event as `name[index]:delta-type` so a sequence reads as one line."""
    out = []
    for name, data in events:
        assert data["type"] == name
        label = name + (f"[{data['index']}]" if "index" in data else "")
        if name == "content_block_start":
            label += ":" + data["content_block"]["type"]
        if name == "content_block_delta":
            label += ":" + data["delta"]["type"]
        out.append(label)
    return out


TEXT = Reply((Block("text", "abcdefgh"),))  # two tokens
ALL = Reply((Block("thinking", "hmm!"), Block("text", "abcd"), Block("tool_use", name="f", input={"q": 1})))


@pytest.mark.parametrize(("reply", "call", "sequence", "stop_reason"), [
    (TEXT, _call(), ["message_start", "content_block_start[0]:text", "ping", "content_block_delta[0]:text_delta",
                     "content_block_delta[0]:text_delta", "content_block_stop[0]", "message_delta", "message_stop"],
     "end_turn"),
    # thinking (with its signature), text, then a tool call whose input streams as JSON ({"q":1} is 2 tokens)
    (ALL, _call(thinking=True), [
        "message_start", "content_block_start[0]:thinking", "ping", "content_block_delta[0]:thinking_delta",
        "content_block_delta[0]:signature_delta", "content_block_stop[0]",
        "content_block_start[1]:text", "content_block_delta[1]:text_delta", "content_block_stop[1]",
        "content_block_start[2]:tool_use", "content_block_delta[2]:input_json_delta",
        "content_block_delta[2]:input_json_delta", "content_block_stop[2]", "message_delta", "message_stop"],
     "tool_use"),
    # thinking not enabled by the request: not sent, and the indices start at the text
    (ALL, _call(), [
        "message_start", "content_block_start[0]:text", "ping", "content_block_delta[0]:text_delta",
        "content_block_stop[0]", "content_block_start[1]:tool_use", "content_block_delta[1]:input_json_delta",
        "content_block_delta[1]:input_json_delta", "content_block_stop[1]", "message_delta", "message_stop"],
     "tool_use"),
    # max_tokens cuts the text at a token; a tool call that does not fit is not sent
    (TEXT, _call(max_tokens=1), ["message_start", "content_block_start[0]:text", "ping",
                                 "content_block_delta[0]:text_delta", "content_block_stop[0]", "message_delta",
                                 "message_stop"], "max_tokens"),
    (ALL, _call(max_tokens=2), ["message_start", "content_block_start[0]:text", "ping",
                                "content_block_delta[0]:text_delta", "content_block_stop[0]", "message_delta",
                                "message_stop"], "max_tokens"),
    # a stop sequence ends the text before it
    (TEXT, _call(stops=("efg",)), ["message_start", "content_block_start[0]:text", "ping",
                                   "content_block_delta[0]:text_delta", "content_block_stop[0]", "message_delta",
                                   "message_stop"], "stop_sequence"),
    # nothing to say: still a ping, the delta and the stop
    (Reply((Block("text", "abcd"),)), _call(stops=("a",)), [
        "message_start", "content_block_start[0]:text", "ping", "content_block_stop[0]", "message_delta",
        "message_stop"], "stop_sequence"),
    (Reply((Block("tool_use", name="f"),)), _call(max_tokens=0), ["message_start", "ping", "message_delta",
                                                                   "message_stop"], "max_tokens"),
    # a scripted stop reason stands when nothing cut the reply
    (Reply((Block("text", "ab"),), stop_reason="refusal"), _call(), [
        "message_start", "content_block_start[0]:text", "ping", "content_block_delta[0]:text_delta",
        "content_block_stop[0]", "message_delta", "message_stop"], "refusal"),
])
def test_event_sequence(reply: Reply, call: MessagesCall, sequence: list[str], stop_reason: str) -> None:
    events = _events(reply, call)
    assert _shape(events) == sequence
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == stop_reason
    assert events[0][1]["message"]["stop_reason"] is None


def test_deltas_carry_the_text_and_the_stop_sequence() -> None:
    events = _events(TEXT, _call(stops=("efg", "cd")))
    texts = [data["delta"]["text"] for name, data in events if name == "content_block_delta"]
    assert texts == ["ab"]
    assert events[-2][1]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "cd"}


def test_tool_call_streams_its_input_and_starts_empty() -> None:
    events = _events(Reply((Block("tool_use", name="get", input={"city": "Paris"}),)), _call())
    start = events[1][1]["content_block"]
    assert start == {"type": "tool_use", "id": "toolu_t_0", "name": "get", "input": {}}
    partial = "".join(data["delta"]["partial_json"] for name, data in events if name == "content_block_delta")
    assert partial == '{"city":"Paris"}'


def test_usage_in_message_start_and_message_delta() -> None:
    events = _events(TEXT, _call())
    start_usage = events[0][1]["message"]["usage"]
    assert start_usage == {"input_tokens": 7, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 5,
                           "cache_creation": {"ephemeral_5m_input_tokens": 3, "ephemeral_1h_input_tokens": 2},
                           "output_tokens": 1}
    assert events[-2][1]["usage"] == {"input_tokens": 7, "cache_creation_input_tokens": 5,
                                      "cache_read_input_tokens": 5, "output_tokens": 2}


def test_message_delta_may_report_output_only() -> None:
    events = _events(TEXT, _call(), full_delta_usage=False)
    assert events[-2][1]["usage"] == {"output_tokens": 2}


def test_message_object_holds_whole_blocks() -> None:
    call = _call(thinking=True)
    composed = compose(ALL, call, "toolu_t")
    message = message_object("msg_t", "claude-x", composed, USAGE)
    assert [block["type"] for block in message["content"]] == ["thinking", "text", "tool_use"]
    assert message["content"][0]["signature"].startswith("twin-")
    assert message["content"][2] == {"type": "tool_use", "id": "toolu_t_2", "name": "f", "input": {"q": 1}}
    assert (message["stop_reason"], message["stop_sequence"]) == ("tool_use", None)
    assert composed.output_tokens == 1 + 1 + 2
    assert {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"} == set(message)


def test_default_reply_echoes_the_last_user_text() -> None:
    composed = compose(Reply(()), _call(text="hello"), "t")
    assert composed.blocks[0].text == "twin: hello"


def test_sse_framing() -> None:
    assert sse("ping", {"type": "ping"}) == b'event: ping\ndata: {"type":"ping"}\n\n'
