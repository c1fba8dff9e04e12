"""A Messages request read and checked as the API checks it, and the fault markers in it. Pure: no I/O."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from doors.model.twin._errors import ERROR_TYPES, ApiError, invalid
from doors.model.twin._script import Fault

MESSAGE_ROLES = ("user", "assistant")
# `[twin:429]`, `[twin:529]`, `[twin:cut=3]`, `[twin:error=2]`, `[twin:slow=50]`, `[twin:retry_after=2]`,
# and `[twin:tokens=N]` (a reply of N tokens)
MARKER = re.compile(r"\[twin:([a-z_]+|\d{3})(?:=(\d{1,6}))?\]")


@dataclass(frozen=True)
class MessagesCall:
    """The parts of a request the twin's reply depends on."""

    body: Mapping[str, Any]
    model: str
    max_tokens: int
    stream: bool
    last_user_text: str
    stop_sequences: tuple[str, ...] = ()
    thinking: bool = False
    last_tool_results: str = ""  # the text of the tool_result blocks of the last user message


def read_json(raw: bytes) -> Mapping[str, Any] | ApiError:
    """The request body as a JSON object, or the 400 the API answers."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return invalid(f"the request body is not valid JSON: {type(exc).__name__}")
    if not isinstance(value, dict):
        return invalid("the request body must be a JSON object")
    return value


def messages_call(body: Mapping[str, Any], *, counting: bool = False) -> MessagesCall | ApiError:
    """Check a Messages body (`counting`: a count_tokens body, which has no max_tokens)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return invalid("model: Field required" if model is None else "model: Input should be a valid string")
    max_tokens = 0 if counting else body.get("max_tokens")  # count_tokens has none, and ignores one it is sent
    if not counting and (type(max_tokens) is not int or max_tokens < 1):
        return invalid("max_tokens: Field required" if max_tokens is None
                       else "max_tokens: Input should be an integer greater than or equal to 1")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return invalid("messages: Field required" if messages is None else "messages: at least one message is required")
    for index, message in enumerate(messages):
        problem = _message_problem(message)
        if problem:
            return invalid(f"messages.{index}.{problem}")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return invalid("stream: Input should be a valid boolean")
    stops = body.get("stop_sequences", [])
    if not isinstance(stops, list) or not all(isinstance(stop, str) and stop for stop in stops):
        return invalid("stop_sequences: Input should be a list of non-empty strings")
    thinking = body.get("thinking")
    enabled = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    limit = max_tokens if type(max_tokens) is int else 0
    return MessagesCall(body, model, limit, stream, _last_user_text(messages), tuple(stops), enabled,
                        _last_tool_results(messages))


def _message_problem(message: Any) -> str | None:
    if not isinstance(message, dict):
        return "Input should be an object"
    if message.get("role") not in MESSAGE_ROLES:
        return "role: Input should be 'user' or 'assistant'"
    content = message.get("content")
    if not isinstance(content, str | list):
        return "content: Input should be a string or a list of blocks"
    if isinstance(content, list) and not all(isinstance(block, dict) and "type" in block for block in content):
        return "content: each block should be an object with a type"
    return None


def _last_user_text(messages: list[Any]) -> str:
    """The text of the last user message (its text blocks joined), "" when it has none."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "".join(block["text"] for block in content
                       if block.get("type") == "text" and isinstance(block.get("text"), str))
    return ""


def _last_tool_results(messages: list[Any]) -> str:
    """The text of the last user message's tool_result blocks (a string content, or its text blocks), joined
    by newlines; "" when it has none. What an agent sent back of its tools: an output, an errno."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        results = [block.get("content") for block in content if block.get("type") == "tool_result"] \
            if isinstance(content, list) else []
        return "\n".join(_result_text(result) for result in results)
    return ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(block["text"] for block in content if isinstance(block, dict)
                       and block.get("type") == "text" and isinstance(block.get("text"), str))
    return ""


def marker_fault(text: str) -> Fault:
    """The fault the `[twin:...]` markers in `text` ask for (later markers override earlier ones)."""
    fault = Fault()
    for name, number in MARKER.findall(text):
        value = int(number) if number else None
        if name.isdigit() and int(name) in ERROR_TYPES:
            fault = fault.merged(Fault(status=int(name)))
        elif name == "cut" and value:
            fault = fault.merged(Fault(cut_after_events=value))
        elif name == "error" and value:
            fault = fault.merged(Fault(error_after_events=value))
        elif name == "slow" and value:
            fault = fault.merged(Fault(event_delay_ms=value))
        elif name == "retry_after" and value is not None:
            fault = fault.merged(Fault(retry_after_s=value))
    return fault


def marker_tokens(text: str) -> int | None:
    """The reply length `[twin:tokens=N]` asks for (N tokens of "twin"), None when no marker asks."""
    asked = [int(number) for name, number in MARKER.findall(text) if name == "tokens" and number]
    return asked[-1] if asked else None


def version_problem(headers: tuple[tuple[bytes, bytes], ...]) -> ApiError | None:
    """The API refuses a request without `anthropic-version`: so does the twin (a door that drops it shows)."""
    if any(name.lower() == b"anthropic-version" and value for name, value in headers):
        return None
    return ApiError(400, "anthropic-version: header is required")


def inflate_gzip(body: bytes, limit: int) -> bytes | ApiError:
    """A gzip request body inflated, holding at most `limit` + 1 bytes whatever it claims (a bomb is a 413)."""
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        plain = inflate.decompress(body, limit + 1)
    except zlib.error:
        return invalid("the gzip request body is corrupt")
    if len(plain) > limit or inflate.unconsumed_tail:
        return ApiError(413, f"the request body is larger than {limit} bytes once inflated")
    if not inflate.eof:
        return invalid("the gzip request body is truncated")
    return plain
