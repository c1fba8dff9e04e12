"""The twin's decisions: one request in, one answer out (status, headers, body pieces, pacing). No I/O.

It keeps what a deterministic provider must remember: a serial for ids, how often each rule was used (for
`times`), and the prompt prefixes it has cached. The drivers (`TwinUpstream` in process, the HTTP server)
only pace and send what it decided.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from doors.model.twin._cache import PromptCache
from doors.model.twin._compose import compose, with_figures
from doors.model.twin._errors import ApiError, error_body, error_object
from doors.model.twin._events import json_bytes, message_object, sse, stream_events
from doors.model.twin._request import (
    MessagesCall,
    marker_fault,
    marker_tokens,
    messages_call,
    read_json,
    version_problem,
)
from doors.model.twin._script import Block, Fault, Reply, Rule, TwinScript
from doors.model.twin._tokens import measure_prompt

Headers = tuple[tuple[bytes, bytes], ...]
MODEL_CREATED_AT = "2026-01-01T00:00:00Z"
DEFAULT_RETRY_AFTER_S = 1


@dataclass(frozen=True)
class Answer:
    """What the twin sends: the body in pieces, a pause before each piece but the first, and whether it ends."""

    status: int
    headers: Headers
    pieces: tuple[bytes, ...]
    delay_s: float = 0.0
    complete: bool = True  # False: the body stops after its pieces without its end (a cut)

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


@dataclass(frozen=True)
class TwinStatistics:
    """Counts since the twin started."""

    requests: int
    messages: int
    streams: int
    faults: int


class Twin:
    """The deterministic Messages API: the same script and the same requests in the same order, the same bytes."""

    def __init__(self, script: TwinScript | None = None) -> None:
        self.script = script or TwinScript()
        self._serial = 0
        self._hits = [0] * len(self.script.rules)
        self._cache = PromptCache()
        self._counts = {"messages": 0, "streams": 0, "faults": 0}

    def statistics(self) -> TwinStatistics:
        """What the twin has answered so far."""
        return TwinStatistics(self._serial, **self._counts)

    def answer(self, method: bytes, path: bytes, headers: Headers, body: bytes) -> Answer:
        """Answer one request; `path` has no query string."""
        self._serial += 1
        if path == b"/v1/messages" and method == b"POST":
            return self._messages(headers, body)
        if path == b"/v1/messages/count_tokens" and method == b"POST":
            return self._count_tokens(headers, body)
        if path == b"/v1/models" and method == b"GET":
            return self._json(200, self._models_page())
        if path.startswith(b"/v1/models/") and method == b"GET":
            model = path[len(b"/v1/models/"):].decode("utf-8", "replace")
            if model in self.script.models:
                return self._json(200, _model_info(model))
            return self.error(ApiError(404, f"model: {model[:100]}"))
        return self.error(ApiError(404, f"Not found: {method.decode('ascii', 'replace')} "
                                        f"{path[:200].decode('utf-8', 'replace')}"))

    def error(self, error: ApiError) -> Answer:
        """The API's error response for `error` (with `retry-after` when it carries one)."""
        request_id = self._id("req")
        headers: Headers = ((b"content-type", b"application/json"), (b"request-id", request_id.encode()))
        if error.retry_after_s is not None:
            headers += ((b"retry-after", str(error.retry_after_s).encode()),)
        return Answer(error.status, headers, (error_body(error, request_id),))

    def _messages(self, headers: Headers, raw: bytes) -> Answer:
        call = self._checked(headers, raw, counting=False)
        if isinstance(call, ApiError):
            return self.error(call)
        self._counts["messages"] += 1
        reply, fault = self._choose(call)
        if fault.status is not None:
            self._counts["faults"] += 1
            retry_after = fault.retry_after_s
            if retry_after is None and fault.status == 429:
                retry_after = DEFAULT_RETRY_AFTER_S
            return self.error(ApiError(fault.status, f"twin: injected {fault.status}", retry_after))
        prompt = measure_prompt(call.body)
        counted = self._cache.input_usage(prompt)
        self._cache.remember(prompt)
        composed = compose(reply, call, self._id("toolu"))
        usage = with_figures(replace(counted, output_tokens=composed.output_tokens), reply.usage)
        if fault != Fault():
            self._counts["faults"] += 1
        message_id = self._id("msg")
        if not call.stream:
            body = json_bytes(message_object(message_id, call.model, composed, usage))
            if fault.cut_after_events is not None:
                return self._answer(200, b"application/json", (body[:len(body) // 2],), fault, complete=False)
            return self._answer(200, b"application/json", (body,), fault)
        self._counts["streams"] += 1
        events = stream_events(message_id, call.model, composed, usage,
                               full_delta_usage=self.script.message_delta_usage == "full")
        pieces = [sse(name, data) for name, data in events]
        if fault.cut_after_events is not None and fault.cut_after_events < len(pieces):
            return self._answer(200, b"text/event-stream", tuple(pieces[:fault.cut_after_events]), fault,
                                complete=False)
        if fault.error_after_events is not None and fault.error_after_events < len(pieces):
            error = error_object(ApiError(529, "twin: injected overloaded_error mid-stream"))
            pieces = [*pieces[:fault.error_after_events], sse("error", error)]
        return self._answer(200, b"text/event-stream", tuple(pieces), fault)

    def _count_tokens(self, headers: Headers, raw: bytes) -> Answer:
        call = self._checked(headers, raw, counting=True)
        if isinstance(call, ApiError):
            return self.error(call)
        return self._json(200, {"input_tokens": measure_prompt(call.body).tokens})

    def _checked(self, headers: Headers, raw: bytes, *, counting: bool) -> MessagesCall | ApiError:
        problem = version_problem(headers)
        if problem is not None:
            return problem
        body = read_json(raw)
        return body if isinstance(body, ApiError) else messages_call(body, counting=counting)

    def _choose(self, call: MessagesCall) -> tuple[Reply, Fault]:
        """The first rule that matches and has uses left (its reply, or the default), and the fault to inject."""
        reply, fault = self.script.default, Fault()
        for index, rule in enumerate(self.script.rules):
            if _matches(rule, call) and (rule.times is None or self._hits[index] < rule.times):
                self._hits[index] += 1
                reply, fault = rule.reply or self.script.default, rule.fault
                break
        if self.script.markers:
            fault = fault.merged(marker_fault(call.last_user_text))
            tokens = marker_tokens(call.last_user_text)
            if tokens is not None:
                reply = Reply((Block("text", "twin" * tokens),))
        return reply, fault

    def _models_page(self) -> dict[str, object]:
        models = self.script.models
        return {"data": [_model_info(model) for model in models], "has_more": False,
                "first_id": models[0] if models else None, "last_id": models[-1] if models else None}

    def _answer(self, status: int, content_type: bytes, pieces: tuple[bytes, ...], fault: Fault,
                *, complete: bool = True) -> Answer:
        headers: Headers = ((b"content-type", content_type), (b"request-id", self._id("req").encode()))
        return Answer(status, headers, pieces, fault.event_delay_ms / 1000, complete)

    def _json(self, status: int, value: object) -> Answer:
        return self._answer(status, b"application/json", (json_bytes(value),), Fault())

    def _id(self, kind: str) -> str:
        return f"{kind}_twin{self._serial:016x}"


def _matches(rule: Rule, call: MessagesCall) -> bool:
    when = rule.when
    return ((when.contains is None or when.contains in call.last_user_text)
            and (when.model is None or when.model == call.model)
            and (when.stream is None or when.stream == call.stream)
            and (when.tool_result is None or when.tool_result in call.last_tool_results))


def _model_info(model: str) -> dict[str, object]:
    return {"type": "model", "id": model, "display_name": model, "created_at": MODEL_CREATED_AT,
            "lifecycle": "active"}
