"""The twin's script file: what it accepts, what it refuses (naming the JSON pointer), which rule answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from doors.model.twin import DEFAULT_MODELS, Block, Fault, Twin, TwinScript, TwinScriptError

V = "twin-script/v0"
HEADERS = ((b"anthropic-version", b"2023-06-01"),)


def _ask(twin: Twin, text: str, *, model: str = "m", stream: bool = False) -> dict[str, Any]:
    body = {"model": model, "max_tokens": 100, "stream": stream, "messages": [{"role": "user", "content": text}]}
    answer = twin.answer(b"POST", b"/v1/messages", HEADERS, json.dumps(body).encode())
    return {"status": answer.status, "body": json.loads(answer.body) if not stream else answer.body}


def _text(twin: Twin, text: str, **kw: Any) -> str:
    reply = _ask(twin, text, **kw)
    assert reply["status"] == 200, reply
    return "".join(block.get("text", "") for block in reply["body"]["content"])


def test_the_readme_example_loads(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[4] / "doors" / "model" / "twin" / "README.md").read_text()
    example = readme.split("```json\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "script.json"
    path.write_text(example)
    script = TwinScript.load(path)
    assert script.rules and script.models


def test_empty_script_is_the_defaults() -> None:
    script = TwinScript.parse({"twin": V})
    assert script == TwinScript()
    assert script.models == DEFAULT_MODELS


@pytest.mark.parametrize(("value", "pointer"), [
    ({}, "/twin"),
    ({"twin": "twin-script/v9"}, "/twin"),
    ({"twin": V, "rule": []}, "/rule"),
    ({"twin": V, "rules": {}}, "/rules"),
    ({"twin": V, "rules": [{"when": {"contain": "x"}}]}, "/rules/0/when/contain"),
    ({"twin": V, "rules": [{"when": {"stream": "yes"}}]}, "/rules/0/when/stream"),
    ({"twin": V, "rules": [{"when": {"tool_result": 1}}]}, "/rules/0/when/tool_result"),
    ({"twin": V, "rules": [{"reply": {}}]}, "/rules/0/reply"),
    ({"twin": V, "rules": [{"reply": {"text": "a", "content": []}}]}, "/rules/0/reply"),
    ({"twin": V, "rules": [{"reply": {"content": [{"type": "image"}]}}]}, "/rules/0/reply/content/0/type"),
    ({"twin": V, "rules": [{"reply": {"content": [{"type": "tool_use"}]}}]}, "/rules/0/reply/content/0/name"),
    ({"twin": V, "rules": [{"reply": {"text": "a", "stop_reason": "done"}}]}, "/rules/0/reply/stop_reason"),
    ({"twin": V, "rules": [{"reply": {"text": "a", "usage": {"output_tokens": -1}}}]},
     "/rules/0/reply/usage/output_tokens"),
    ({"twin": V, "rules": [{"reply": {"text": "a", "usage": {"cache_write": 1}}}]}, "/rules/0/reply/usage/cache_write"),
    ({"twin": V, "rules": [{"fault": {"status": 418}}]}, "/rules/0/fault/status"),
    ({"twin": V, "rules": [{"fault": {"cut_after_events": 0}}]}, "/rules/0/fault/cut_after_events"),
    ({"twin": V, "rules": [{"fault": {"event_delay_ms": 1.5}}]}, "/rules/0/fault/event_delay_ms"),
    ({"twin": V, "rules": [{"times": 0}]}, "/rules/0/times"),
    ({"twin": V, "default": "hello"}, "/default"),
    ({"twin": V, "models": ["a", 1]}, "/models/1"),
    ({"twin": V, "markers": 1}, "/markers"),
    ({"twin": V, "message_delta_usage": "some"}, "/message_delta_usage"),
])
def test_refused_scripts_name_the_pointer(value: Any, pointer: str) -> None:
    with pytest.raises(TwinScriptError) as refused:
        TwinScript.parse(value)
    assert str(refused.value).startswith(pointer + ":"), str(refused.value)


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"twin": "twin-script/v0", "rules": [{"times": 0}]}')
    with pytest.raises(TwinScriptError, match=r"bad\.json: /rules/0/times"):
        TwinScript.load(path)
    path.write_text("{not json")
    with pytest.raises(TwinScriptError, match=r"bad\.json: cannot read"):
        TwinScript.load(path)
    with pytest.raises(TwinScriptError, match="cannot read"):
        TwinScript.load(tmp_path / "missing.json")


def test_first_matching_rule_answers_then_the_default() -> None:
    twin = Twin(TwinScript.parse({"twin": V, "rules": [
        {"when": {"contains": "weather", "model": "small"}, "reply": {"text": "small sun"}},
        {"when": {"contains": "weather"}, "reply": {"text": "sun"}},
        {"when": {"stream": True}, "reply": {"text": "streamed"}},
    ], "default": {"text": "default"}}))
    assert _text(twin, "the weather?") == "sun"
    assert _text(twin, "the weather?", model="small") == "small sun"
    assert _text(twin, "anything") == "default"
    assert b'"text":"stre"' in _ask(twin, "anything", stream=True)["body"]  # streamed one token a delta


def _send_back(twin: Twin, result: Any, text: str = "") -> str:
    """What the twin answers an agent that sends back `result` for its tool call (and `text` beside it)."""
    turn: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}]},
                {"role": "user", "content": [*turn, *([{"type": "text", "text": text}] if text else [])]}]
    body = {"model": "m", "max_tokens": 100, "messages": messages}
    answer = twin.answer(b"POST", b"/v1/messages", HEADERS, json.dumps(body).encode())
    return "".join(block.get("text", "") for block in json.loads(answer.body)["content"])


def test_a_rule_can_match_what_the_agent_sent_back_of_its_tool() -> None:
    twin = Twin(TwinScript.parse({"twin": V, "rules": [
        {"when": {"tool_result": "EACCES"}, "reply": {"text": "refused"}}], "default": {"text": "other"}}))
    assert _send_back(twin, "EACCES: permission denied, fsync") == "refused"
    assert _send_back(twin, [{"type": "text", "text": "Error: EACCES: permission denied"}]) == "refused"
    assert _send_back(twin, "File created successfully") == "other"
    assert _send_back(twin, "ok", text="EACCES in the user's words") == "other"  # text blocks are `contains`'
    assert _text(twin, "EACCES") == "other"  # a plain user message has no tool result


def test_without_a_default_the_twin_echoes() -> None:
    assert _text(Twin(TwinScript.parse({"twin": V})), "hello") == "twin: hello"


def test_times_limits_a_rule_to_its_first_matches() -> None:
    twin = Twin(TwinScript.parse({"twin": V, "rules": [
        {"when": {"contains": "go"}, "fault": {"status": 529}, "times": 2}]}))
    statuses = [_ask(twin, "go")["status"] for _ in range(3)]
    assert statuses == [529, 529, 200]


def test_a_rule_without_reply_answers_the_default_with_its_fault() -> None:
    twin = Twin(TwinScript.parse({"twin": V, "default": {"text": "abcdefgh"},
                                  "rules": [{"when": {"contains": "cut"}, "fault": {"cut_after_events": 2}}]}))
    answer = twin.answer(b"POST", b"/v1/messages", HEADERS, json.dumps(
        {"model": "m", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "cut"}]}).encode())
    assert not answer.complete and len(answer.pieces) == 2


def test_scripted_content_and_usage() -> None:
    twin = Twin(TwinScript.parse({"twin": V, "rules": [{"reply": {
        "content": [{"type": "text", "text": "calling"}, {"type": "tool_use", "name": "ls", "input": {"d": "."}}],
        "usage": {"cache_read_input_tokens": 500, "cache_creation_1h": 20, "output_tokens": 9}}}]}))
    body = _ask(twin, "x")["body"]
    assert [block["type"] for block in body["content"]] == ["text", "tool_use"]
    assert body["stop_reason"] == "tool_use"
    assert body["usage"]["cache_read_input_tokens"] == 500
    assert body["usage"]["cache_creation"] == {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 20}
    assert body["usage"]["output_tokens"] == 9


@pytest.mark.parametrize(("text", "fault"), [
    ("plain", Fault()),
    ("[twin:429]", Fault(status=429)),
    ("x [twin:529] y", Fault(status=529)),
    ("[twin:cut=3]", Fault(cut_after_events=3)),
    ("[twin:error=2]", Fault(error_after_events=2)),
    ("[twin:slow=50]", Fault(event_delay_ms=50)),
    ("[twin:429][twin:retry_after=0]", Fault(status=429, retry_after_s=0)),
    ("[twin:418]", Fault()),  # not an error the API answers
    ("[twin:cut=0]", Fault()),
    ("[twin:bogus=1]", Fault()),
])
def test_markers(text: str, fault: Fault) -> None:
    from doors.model.twin._request import marker_fault
    assert marker_fault(text) == fault


def test_markers_can_be_switched_off() -> None:
    assert _ask(Twin(TwinScript.parse({"twin": V, "markers": False})), "[twin:429]")["status"] == 200
    assert _ask(Twin(), "[twin:429]")["status"] == 429


def test_block_kinds() -> None:
    script = TwinScript.parse({"twin": V, "default": {"content": [{"type": "thinking", "thinking": "t"}]}})
    assert script.default.content == (Block("thinking", "t"),)
