"""The twin's script: replies chosen by a matching rule, a default, and faults to inject. Pure: no I/O but `load`.

The format is documented in doors/model/twin/README.md. Every key is checked: an unknown key, a wrong type or
an out-of-range number is a TwinScriptError naming the file and the JSON pointer of the value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doors.model.twin._errors import ERROR_TYPES

SCRIPT_VERSION = "twin-script/v0"
DEFAULT_MODELS = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-sonnet-4-5",
                  "claude-haiku-4-5")
STOP_REASONS = frozenset({"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"})
USAGE_FIELDS = frozenset({"input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h",
                          "output_tokens"})
DELTA_USAGE = frozenset({"full", "output"})


class TwinScriptError(ValueError):
    """A script the twin refuses: where (file and JSON pointer) and why."""


@dataclass(frozen=True)
class Block:
    """One scripted content block: text, thinking, or a tool call."""

    kind: str  # "text", "thinking", "tool_use"
    text: str = ""  # the text or the thinking
    name: str = ""  # tool_use: the tool
    input: Mapping[str, Any] = field(default_factory=dict)  # tool_use: its arguments


@dataclass(frozen=True)
class Reply:
    """What the model answers: its blocks, a stop reason instead of the computed one, usage figures to report."""

    content: tuple[Block, ...]
    stop_reason: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)  # keys from USAGE_FIELDS; replace what is counted


@dataclass(frozen=True)
class Fault:
    """What goes wrong: an error status instead of a reply, a cut, an error event, a slow stream."""

    status: int | None = None  # answer this error (ERROR_TYPES) instead of the reply
    retry_after_s: int | None = None  # the retry-after header sent with `status`
    cut_after_events: int | None = None  # the stream (or JSON body) stops after this many events, no end
    error_after_events: int | None = None  # an SSE `error` event (overloaded_error) after this many events
    event_delay_ms: int = 0  # a pause before every event but the first (a non-stream reply: before its body)

    def merged(self, other: Fault) -> Fault:
        """This fault with every field `other` sets taking its value."""
        return Fault(
            other.status if other.status is not None else self.status,
            other.retry_after_s if other.retry_after_s is not None else self.retry_after_s,
            other.cut_after_events if other.cut_after_events is not None else self.cut_after_events,
            other.error_after_events if other.error_after_events is not None else self.error_after_events,
            other.event_delay_ms or self.event_delay_ms,
        )


@dataclass(frozen=True)
class When:
    """A rule's condition; every field given must hold."""

    contains: str | None = None  # a substring of the last user message's text
    model: str | None = None
    stream: bool | None = None
    tool_result: str | None = None  # a substring of the last user message's tool results (their text)


@dataclass(frozen=True)
class Rule:
    when: When
    reply: Reply | None = None  # None: the default reply
    fault: Fault = Fault()
    times: int | None = None  # the rule applies to its first `times` matching requests only


def default_reply() -> Reply:
    """The reply when no rule matches and the script names none: the twin echoes the last user text."""
    return Reply(content=())


@dataclass(frozen=True)
class TwinScript:
    """The rules (first match wins), the default reply, the models listed, and how usage is reported."""

    rules: tuple[Rule, ...] = ()
    default: Reply = field(default_factory=default_reply)
    models: tuple[str, ...] = DEFAULT_MODELS
    markers: bool = True  # whether `[twin:...]` in the last user message injects faults
    message_delta_usage: str = "full"  # "output": message_delta reports output_tokens only

    @classmethod
    def load(cls, path: str | Path) -> TwinScript:
        """Read and check the script file at `path`."""
        try:
            value = json.loads(Path(path).read_bytes())
        except (OSError, ValueError) as exc:
            raise TwinScriptError(f"{path}: cannot read the twin script: {exc}") from exc
        try:
            return cls.parse(value)
        except TwinScriptError as exc:
            raise TwinScriptError(f"{path}: {exc}") from exc

    @classmethod
    def parse(cls, value: Any) -> TwinScript:
        """Check a script given as its JSON value."""
        top = _object(value, "", {"twin", "rules", "default", "models", "markers", "message_delta_usage"})
        if top.get("twin") != SCRIPT_VERSION:
            raise TwinScriptError(f"/twin: must be {SCRIPT_VERSION!r}")
        rules = tuple(_rule(item, f"/rules/{index}") for index, item in enumerate(_list(top, "rules", "")))
        default = _reply(top["default"], "/default") if "default" in top else default_reply()
        models = tuple(_string(item, f"/models/{index}") for index, item in enumerate(_list(top, "models", "")))
        markers = _bool(top.get("markers", True), "/markers")
        delta_usage = top.get("message_delta_usage", "full")
        if delta_usage not in DELTA_USAGE:
            raise TwinScriptError(f"/message_delta_usage: must be one of {sorted(DELTA_USAGE)}")
        return cls(rules, default, models if "models" in top else DEFAULT_MODELS, markers, delta_usage)


def _rule(value: Any, where: str) -> Rule:
    rule = _object(value, where, {"when", "reply", "fault", "times"})
    when = _object(rule.get("when", {}), f"{where}/when", {"contains", "model", "stream", "tool_result"})
    condition = When(
        _string(when["contains"], f"{where}/when/contains") if "contains" in when else None,
        _string(when["model"], f"{where}/when/model") if "model" in when else None,
        _bool(when["stream"], f"{where}/when/stream") if "stream" in when else None,
        _string(when["tool_result"], f"{where}/when/tool_result") if "tool_result" in when else None,
    )
    reply = _reply(rule["reply"], f"{where}/reply") if "reply" in rule else None
    fault = parse_fault(rule["fault"], f"{where}/fault") if "fault" in rule else Fault()
    times = _count(rule["times"], f"{where}/times", minimum=1) if "times" in rule else None
    return Rule(condition, reply, fault, times)


def _reply(value: Any, where: str) -> Reply:
    reply = _object(value, where, {"text", "content", "stop_reason", "usage"})
    if ("text" in reply) == ("content" in reply):
        raise TwinScriptError(f"{where}: give exactly one of text or content")
    if "text" in reply:
        content: tuple[Block, ...] = (Block("text", _string(reply["text"], f"{where}/text")),)
    else:
        items = reply["content"]
        if not isinstance(items, list):
            raise TwinScriptError(f"{where}/content: must be a list of blocks")
        content = tuple(_block(item, f"{where}/content/{index}") for index, item in enumerate(items))
    stop = reply.get("stop_reason")
    if stop is not None and stop not in STOP_REASONS:
        raise TwinScriptError(f"{where}/stop_reason: must be one of {sorted(STOP_REASONS)}")
    usage = _object(reply.get("usage", {}), f"{where}/usage", USAGE_FIELDS)
    counts = {key: _count(number, f"{where}/usage/{key}") for key, number in usage.items()}
    return Reply(content, stop, counts)


def _block(value: Any, where: str) -> Block:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        block = _object(value, where, {"type", "text"})
        return Block("text", _string(block.get("text"), f"{where}/text"))
    if kind == "thinking":
        block = _object(value, where, {"type", "thinking"})
        return Block("thinking", _string(block.get("thinking"), f"{where}/thinking"))
    if kind == "tool_use":
        block = _object(value, where, {"type", "name", "input"})
        arguments = _object(block.get("input", {}), f"{where}/input", None)
        return Block("tool_use", name=_string(block.get("name"), f"{where}/name"), input=arguments)
    raise TwinScriptError(f"{where}/type: must be text, thinking or tool_use")


def parse_fault(value: Any, where: str) -> Fault:
    """Check a fault object (a rule's `fault`)."""
    fault = _object(value, where, {"status", "retry_after_s", "cut_after_events", "error_after_events",
                                   "event_delay_ms"})
    status = fault.get("status")
    if status is not None and (type(status) is not int or status not in ERROR_TYPES):
        raise TwinScriptError(f"{where}/status: must be one of {sorted(ERROR_TYPES)}")
    return Fault(
        status,
        _count(fault["retry_after_s"], f"{where}/retry_after_s") if "retry_after_s" in fault else None,
        _count(fault["cut_after_events"], f"{where}/cut_after_events", 1) if "cut_after_events" in fault else None,
        _count(fault["error_after_events"], f"{where}/error_after_events", 1)
        if "error_after_events" in fault else None,
        _count(fault.get("event_delay_ms", 0), f"{where}/event_delay_ms"),
    )


def _object(value: Any, where: str, allowed: set[str] | frozenset[str] | None) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TwinScriptError(f"{where or '/'}: must be an object")
    unknown = sorted(set(value) - allowed) if allowed is not None else []
    if unknown:
        raise TwinScriptError(f"{where}/{unknown[0]}: unknown key (known: {', '.join(sorted(allowed or ()))})")
    return value


def _list(top: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = top.get(key, [])
    if not isinstance(value, list):
        raise TwinScriptError(f"{where}/{key}: must be a list")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise TwinScriptError(f"{where}: must be a string")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise TwinScriptError(f"{where}: must be true or false")
    return value


def _count(value: Any, where: str, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise TwinScriptError(f"{where}: must be an integer >= {minimum}")
    return value
