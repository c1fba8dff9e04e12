"""The Messages API's answer as a JSON message or as its stream of server-sent events. Pure: no I/O.

The stream is the API's sequence: `message_start` (the message with no content, `stop_reason` null, the input
usage and an output count of at most 1), then per block `content_block_start`, its deltas (one token each),
`content_block_stop`, with one `ping` after the first block starts; then `message_delta` (stop reason, stop
sequence, cumulative usage) and `message_stop`.
"""

from __future__ import annotations

import json
from typing import Any

from doors.model._usage import Usage
from doors.model.twin._compose import Composed, OutBlock

Event = tuple[str, dict[str, Any]]  # (the SSE event name, its data)
DELTA_TYPES = {"text": ("text_delta", "text"), "thinking": ("thinking_delta", "thinking"),
               "tool_use": ("input_json_delta", "partial_json")}


def usage_object(usage: Usage, output_tokens: int | None = None) -> dict[str, Any]:
    """The API's `usage` object (`output_tokens` given: that count instead of the total)."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_5m + usage.cache_creation_1h,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_creation_5m,
                           "ephemeral_1h_input_tokens": usage.cache_creation_1h},
        "output_tokens": usage.output_tokens if output_tokens is None else output_tokens,
    }


def block_object(block: OutBlock) -> dict[str, Any]:
    """A whole content block, as a non-streamed message holds it."""
    if block.kind == "tool_use":
        return {"type": "tool_use", "id": block.tool_id, "name": block.name, "input": dict(block.input)}
    if block.kind == "thinking":
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    return {"type": "text", "text": block.text}


def message_object(message_id: str, model: str, composed: Composed, usage: Usage) -> dict[str, Any]:
    """The non-streamed answer."""
    return {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [block_object(block) for block in composed.blocks],
        "stop_reason": composed.stop_reason, "stop_sequence": composed.stop_sequence,
        "usage": usage_object(usage),
    }


def stream_events(
    message_id: str, model: str, composed: Composed, usage: Usage, *, full_delta_usage: bool = True
) -> list[Event]:
    """The streamed answer, event by event (`full_delta_usage`: message_delta repeats the input counts)."""
    start: dict[str, Any] = {
        "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": usage_object(usage, output_tokens=min(1, usage.output_tokens)),
    }
    events: list[Event] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(composed.blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": _empty_block(block)}))
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events.extend(_deltas(index, block))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if not composed.blocks:
        events.append(("ping", {"type": "ping"}))
    final = usage_object(usage)
    delta_usage = {key: final[key] for key in ("input_tokens", "cache_creation_input_tokens",
                                               "cache_read_input_tokens", "output_tokens")}
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": composed.stop_reason, "stop_sequence": composed.stop_sequence},
        "usage": delta_usage if full_delta_usage else {"output_tokens": usage.output_tokens},
    }))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _empty_block(block: OutBlock) -> dict[str, Any]:
    if block.kind == "tool_use":
        return {"type": "tool_use", "id": block.tool_id, "name": block.name, "input": {}}
    if block.kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {"type": "text", "text": ""}


def _deltas(index: int, block: OutBlock) -> list[Event]:
    delta_type, key = DELTA_TYPES[block.kind]
    events: list[Event] = [("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": delta_type, key: piece}})
                           for piece in block.pieces]
    if block.kind == "thinking":
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "signature_delta", "signature": block.signature}}))
    return events


def sse(name: str, data: dict[str, Any]) -> bytes:
    """One server-sent event."""
    return b"event: " + name.encode() + b"\ndata: " + json_bytes(data) + b"\n\n"


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
