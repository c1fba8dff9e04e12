"""The twin's deterministic token count, and the prompt's cache breakpoints. Pure: no I/O.

The rule: a text is cut, from its start, into pieces of at most 4 UTF-8 bytes that never split a character;
each piece is one token (ASCII: ceil(len / 4); "" is 0). A request's input is its tools, then its system
prompt, then its messages, in the API's cache order; a text block counts its text, any other block (image,
tool_use, tool_result, document) counts its compact JSON with keys sorted and `cache_control` left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

TOKEN_BYTES = 4


def split_tokens(text: str) -> list[str]:
    """`text` cut into its tokens: pieces of at most TOKEN_BYTES UTF-8 bytes, whole characters only."""
    if text.isascii():
        return [text[start:start + TOKEN_BYTES] for start in range(0, len(text), TOKEN_BYTES)]
    pieces: list[str] = []
    start, size = 0, 0
    for index, char in enumerate(text):
        width = len(char.encode("utf-8", "surrogatepass"))
        if size and size + width > TOKEN_BYTES:
            pieces.append(text[start:index])
            start, size = index, 0
        size += width
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def count_text(text: str) -> int:
    """How many tokens `text` is (the length of `split_tokens(text)`)."""
    return len(split_tokens(text))


@dataclass(frozen=True)
class Breakpoint:
    """A `cache_control` mark: the prompt up to and including its block, as tokens and a digest of its content."""

    tokens: int  # the prompt's tokens from its start up to this mark
    digest: str  # sha256 of the model and the prompt's content up to this mark (cache_control left out)
    ttl: str  # "5m" or "1h"


@dataclass(frozen=True)
class Prompt:
    """What the input of one request is, for counting and for the twin's prompt cache."""

    tokens: int
    breakpoints: tuple[Breakpoint, ...]


def measure_prompt(body: Mapping[str, Any]) -> Prompt:
    """Count the input of a Messages (or count_tokens) body and find its cache breakpoints, in order."""
    digest = hashlib.sha256(json.dumps(body.get("model"), ensure_ascii=False).encode())
    total = 0
    marks: list[Breakpoint] = []
    for block in _prompt_blocks(body):
        content = _without_cache_control(block)
        digest.update(_canonical(content).encode())
        total += _block_tokens(content)
        control = block.get("cache_control") if isinstance(block, Mapping) else None
        if isinstance(control, Mapping):
            ttl = "1h" if control.get("ttl") == "1h" else "5m"
            marks.append(Breakpoint(total, digest.copy().hexdigest(), ttl))
    return Prompt(total, tuple(marks))


def _prompt_blocks(body: Mapping[str, Any]) -> Iterator[Any]:
    """The prompt's blocks in cache order: each tool, each system block, each message's blocks."""
    tools = body.get("tools")
    if isinstance(tools, list):
        yield from tools
    system = body.get("system")
    if isinstance(system, str):
        yield {"type": "text", "text": system}
    elif isinstance(system, list):
        yield from system
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            yield {"type": "text", "text": content}
        elif isinstance(content, list):
            yield from content


def _without_cache_control(block: Any) -> Any:
    if isinstance(block, Mapping):
        return {key: value for key, value in block.items() if key != "cache_control"}
    return block


def _block_tokens(block: Any) -> int:
    if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return count_text(block["text"])
    return count_text(_canonical(block))


def _canonical(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
