"""What a response says it used: the usage of an SSE stream or a JSON message, read as the bytes go by. Pure.

The door relays the upstream's bytes unchanged and feeds the same bytes here, in whatever pieces they came.
Usage is `message_start.message.usage`, overwritten field by field by each `message_delta.usage` that carries
the field (as the SDK's accumulator does); `output_tokens` in the last `message_delta` is the billed total. A
stream is complete only when a `message_stop` event ends with its blank line. Memory is bounded: a line or an
event over `max_event_bytes` (a body over `max_json_bytes`) is an error, not a bigger buffer.

Cache writes: `cache_creation.ephemeral_5m/1h_input_tokens` when the response splits them; whatever part of
`cache_creation_input_tokens` the split does not account for (all of it when there is no split) is counted
as a 1-hour write, the dearest, so an unsplit answer is never under-charged. Beta `usage.iterations` entries
of type `compaction` are outside the top-level fields, so they are added. Web searches
(`server_tool_use.web_search_requests`) are counted: they are billed per search.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_EVENT_BYTES = 1 << 20
MAX_JSON_BYTES = 16 << 20
# Events whose data carries usage, the end or an error; the rest (content deltas, pings) are counted, not parsed.
# An event with no `event:` line is a "message" by the SSE rules, and is parsed to see what it is.
_PARSED_EVENTS = frozenset({b"message_start", b"message_delta", b"message_stop", b"error", b"message"})
_COUNT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
_SPLIT_FIELDS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


@dataclass(frozen=True)
class Usage:
    """Tokens by the kind they are billed as. `input_tokens` excludes cache writes and reads (as the API's)."""

    input_tokens: int = 0
    cache_creation_5m: int = 0
    cache_creation_1h: int = 0
    cache_read: int = 0
    output_tokens: int = 0
    web_search_requests: int = 0  # `server_tool_use.web_search_requests`: billed per search, not per token

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token, however billed: what a long-prompt price band is decided on."""
        return self.input_tokens + self.cache_creation_5m + self.cache_creation_1h + self.cache_read

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.cache_creation_5m + other.cache_creation_5m,
                     self.cache_creation_1h + other.cache_creation_1h, self.cache_read + other.cache_read,
                     self.output_tokens + other.output_tokens, self.web_search_requests + other.web_search_requests)


@dataclass(frozen=True)
class UsageReport:
    """What a response used, whether it ended properly, the API error it ended with, and the reader's own problem."""

    usage: Usage
    complete: bool  # SSE: a `message_stop` event was read whole; JSON: the body was a whole `message`
    error_type: str | None = None  # an upstream `error` (SSE event or JSON body): its `error.type`
    problem: str | None = None  # why the reader gave up (UsageError), when it did
    events: int = 0


class UsageError(ValueError):
    """The response cannot be read for usage (an event too large, data that is not JSON): the door must cut it."""


def usage_from(fields: Mapping[str, Any]) -> Usage:
    """A `usage` object of the API as billed token kinds (see the module docstring for cache writes)."""
    counts = {name: _count(fields, name) for name in _COUNT_FIELDS}
    split = fields.get("cache_creation")
    split = split if isinstance(split, Mapping) else {}
    five, hour = (_count(split, name) for name in _SPLIT_FIELDS)
    unsplit = max(0, counts["cache_creation_input_tokens"] - five - hour)
    tools = fields.get("server_tool_use")
    searches = _count(tools, "web_search_requests") if isinstance(tools, Mapping) else 0
    usage = Usage(counts["input_tokens"], five, hour + unsplit, counts["cache_read_input_tokens"],
                  counts["output_tokens"], searches)
    for iteration in _iterations(fields):
        usage += usage_from({k: v for k, v in iteration.items() if k != "iterations"})
    return usage


def _count(fields: Mapping[str, Any], name: str) -> int:
    value = fields.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"usage.{name} is {repr(value)[:40]}, not a count of tokens")
    return value


def _iterations(fields: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    iterations = fields.get("iterations")
    if iterations is None:
        return []
    if not isinstance(iterations, list) or not all(isinstance(item, Mapping) for item in iterations):
        raise UsageError("usage.iterations is not a list of usage objects")
    return [item for item in iterations if item.get("type") == "compaction"]


class UsageReader:
    """Feed it a response body in any pieces (`feed`), then `finish()` for the report. Sans-IO."""

    def __init__(self, *, stream: bool, max_event_bytes: int = MAX_EVENT_BYTES,
                 max_json_bytes: int = MAX_JSON_BYTES) -> None:
        self._stream = stream
        self._max_event = max_event_bytes
        self._max_json = max_json_bytes
        self._pending = bytearray()  # an unfinished line (SSE) or the whole body so far (JSON)
        self._skip_lf = False  # the last piece ended in CR: a LF opening the next one ends that same line
        self._event: bytes | None = None
        self._data: list[bytes] = []
        self._data_bytes = 0
        self._has_data = False
        self._fields: dict[str, Any] = {}
        self._stopped = False
        self._error_type: str | None = None
        self._problem: str | None = None
        self._events = 0

    def feed(self, chunk: bytes) -> None:
        """Read the next piece of the body. Raises UsageError (now and on every later call) when it cannot."""
        if self._problem is not None:
            raise UsageError(self._problem)
        try:
            if self._stream:
                self._feed_sse(chunk)
            else:
                self._feed_json(chunk)
        except UsageError as exc:
            self._problem = str(exc)
            self._pending.clear()
            self._data.clear()
            raise

    def finish(self) -> UsageReport:
        """The body has ended: what it used and whether it ended properly (never raises)."""
        usage = Usage()
        try:
            if self._problem is None and not self._stream:
                self._finish_json()
            if self._problem is None:
                usage = usage_from(self._fields)
        except UsageError as exc:
            self._problem = str(exc)
        return UsageReport(usage, self._stopped and self._problem is None, self._error_type, self._problem,
                           self._events)

    # SSE (html.spec.whatwg.org "event stream interpretation"): lines end in CRLF, LF or CR.
    def _feed_sse(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._skip_lf:
            self._skip_lf = False
            chunk = chunk[1:] if chunk[:1] == b"\n" else chunk
        cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if cut < 0:
            self._pending += chunk
            self._check_line(len(self._pending))
            return
        text = bytes(self._pending) + chunk[:cut + 1]
        self._pending = bytearray(chunk[cut + 1:])
        self._check_line(len(self._pending))
        self._skip_lf = text.endswith(b"\r")
        for line in text.splitlines():
            self._line(line)

    def _check_line(self, size: int) -> None:
        if size > self._max_event:
            raise UsageError(f"the upstream sent an SSE line of more than {self._max_event} bytes")

    def _line(self, line: bytes) -> None:
        self._check_line(len(line))
        if not line:
            self._dispatch()
            return
        name, _, value = line.partition(b":")
        if not name:
            return  # a comment
        value = value[1:] if value.startswith(b" ") else value
        if name == b"event":
            self._event = value
        elif name == b"data":
            self._data_bytes += len(value) + 1
            if self._data_bytes > self._max_event:
                raise UsageError(f"the upstream sent an SSE event of more than {self._max_event} bytes")
            self._has_data = True
            if self._event is None or self._event in _PARSED_EVENTS:
                self._data.append(value)

    def _dispatch(self) -> None:
        name, data, has_data = self._event or b"message", self._data, self._has_data
        self._event, self._data, self._data_bytes, self._has_data = None, [], 0, False
        if not has_data:
            return
        self._events += 1
        if name in _PARSED_EVENTS:
            self._apply(_json_object(b"\n".join(data), f"the SSE event {name.decode(errors='replace')!r}"))

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            self._merge(message.get("usage") if isinstance(message, Mapping) else None)
        elif kind == "message_delta":
            self._merge(event.get("usage"))
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            self._error_type = _error_type_of(event)

    def _merge(self, usage: object) -> None:
        if usage is None:
            return
        if not isinstance(usage, Mapping):
            raise UsageError("an event's usage is not an object")
        self._fields.update({key: value for key, value in usage.items() if value is not None})

    def _feed_json(self, chunk: bytes) -> None:
        if len(self._pending) + len(chunk) > self._max_json:
            raise UsageError(f"the upstream's JSON body is over {self._max_json} bytes")
        self._pending += chunk

    def _finish_json(self) -> None:
        try:
            message = _json_object(bytes(self._pending), "the response body")
        except UsageError:
            return  # a cut or garbled body: incomplete, charged as such; not the reader's failure
        if message.get("type") == "error":
            self._error_type = _error_type_of(message)
        elif message.get("type") == "message":
            self._merge(message.get("usage"))
            self._stopped = True


def _json_object(data: bytes, what: str) -> Mapping[str, Any]:
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise UsageError(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} is not a JSON object")
    return value


def _error_type_of(event: Mapping[str, Any]) -> str:
    error = event.get("error")
    kind = error.get("type") if isinstance(error, Mapping) else None
    return kind if isinstance(kind, str) else "api_error"
