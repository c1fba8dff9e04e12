"""What the twin answers to one call: its blocks cut to `max_tokens` and stop sequences, and its usage. Pure.

Output tokens are counted with the input's rule (`_tokens`): a text or thinking block its text, a tool call the
compact JSON of its input. A block that does not fit in what `max_tokens` leaves is cut at a token (a tool
call, which cannot be half sent, is dropped) and the stop reason is `max_tokens`. The earliest stop sequence
in a text block ends the reply there (`stop_sequence`). A thinking block is sent only when the request
enables thinking, as the API does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from doors.model._usage import Usage
from doors.model.twin._request import MessagesCall
from doors.model.twin._script import Block, Reply
from doors.model.twin._tokens import TOKEN_BYTES, split_tokens

ECHO_CHARS = 200


@dataclass(frozen=True)
class OutBlock:
    """One block of the answer, as the tokens it streams."""

    kind: str  # "text", "thinking", "tool_use"
    pieces: tuple[str, ...]  # its text, thinking, or input JSON, one token each
    name: str = ""  # tool_use
    input: Mapping[str, Any] = field(default_factory=dict)  # tool_use
    tool_id: str = ""  # tool_use

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def signature(self) -> str:
        """A thinking block's signature: deterministic, so replies can be compared."""
        return "twin-" + hashlib.sha256(self.text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Composed:
    blocks: tuple[OutBlock, ...]
    stop_reason: str
    stop_sequence: str | None
    output_tokens: int


def with_figures(usage: Usage, figures: Mapping[str, int]) -> Usage:
    """`usage` with a script's figures (keys as in the script's `usage`) in place of what was counted."""
    return Usage(
        figures.get("input_tokens", usage.input_tokens),
        figures.get("cache_creation_5m", usage.cache_creation_5m),
        figures.get("cache_creation_1h", usage.cache_creation_1h),
        figures.get("cache_read_input_tokens", usage.cache_read),
        figures.get("output_tokens", usage.output_tokens),
    )


def echo_reply(call: MessagesCall) -> Reply:
    """The default answer: the twin says what it was told, so a test sees which request it answered."""
    return Reply((Block("text", "twin: " + call.last_user_text[:ECHO_CHARS]),))


def compose(reply: Reply, call: MessagesCall, tool_prefix: str) -> Composed:
    """The blocks of `reply` for `call`, cut where max_tokens or a stop sequence ends them."""
    scripted = reply.content or echo_reply(call).content
    left = call.max_tokens
    blocks: list[OutBlock] = []
    stop_reason, stop_sequence = None, None
    for block in scripted:
        if block.kind == "thinking" and not call.thinking:
            continue
        text, found = _before_stop(block, call.stop_sequences)
        out = _out_block(block, text[:(left + 1) * TOKEN_BYTES], f"{tool_prefix}_{len(blocks)}")
        if len(out.pieces) > left:
            if out.kind != "tool_use":
                blocks.append(OutBlock(out.kind, out.pieces[:left]))
            stop_reason = "max_tokens"
            break
        blocks.append(out)
        left -= len(out.pieces)
        if found is not None:
            stop_reason, stop_sequence = "stop_sequence", found
            break
    if stop_reason is None:
        uses_tool = any(block.kind == "tool_use" for block in blocks)
        stop_reason = reply.stop_reason or ("tool_use" if uses_tool else "end_turn")
    return Composed(tuple(blocks), stop_reason, stop_sequence, sum(len(block.pieces) for block in blocks))


def _before_stop(block: Block, stops: tuple[str, ...]) -> tuple[str, str | None]:
    """A text block's text up to its earliest stop sequence, and that sequence (None when there is none)."""
    if block.kind != "text":
        return block.text, None
    hits = [(block.text.find(stop), stop) for stop in stops if stop in block.text]
    if not hits:
        return block.text, None
    at, stop = min(hits)
    return block.text[:at], stop


def _out_block(block: Block, text: str, tool_id: str) -> OutBlock:
    if block.kind == "tool_use":
        arguments = json.dumps(block.input, separators=(",", ":"), ensure_ascii=False)
        return OutBlock("tool_use", tuple(split_tokens(arguments)), block.name, block.input, tool_id)
    return OutBlock(block.kind, tuple(split_tokens(text)))
