"""What the door forwards: the headers, the body it rewrote, and what the call reserves. Pure.

The order the door applies them in, once doors/_http has routed the path without its query string (so
`?beta=true` reaches /v1/messages): `decoded_body` (gzip with a cap on what it inflates to), `read_request`
(a JSON object with a model and, for a message, max_tokens), `model_price` (the `models` row, then a price),
`plan_call` (the reservation and the lowered max_tokens), and `forward_headers` (an allowlist: whatever the
client sent as a credential is never forwarded).
Each step returns its value or a Refusal, so the door's chain reads as these steps in order.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from doors._refusal import Refusal
from doors.model._errors import ROW_BUDGET, ROW_MODELS, ROW_REQUEST, WHO, shown
from doors.model._prices import WEB_SEARCH_MICROUSD, Price, price_for, undated
from doors.model._upstream import Headers

_Thinking = tuple[dict[str, Any], int] | None  # the thinking object to forward and its budget_tokens

MAX_BODY_BYTES = 32 << 20  # the API's own limit (413 request_too_large above 32 MB), decompressed
_INFLATE_STEP = 1 << 20  # inflated a MiB at a time: a refused bomb holds at most the cap
THINKING_MIN_TOKENS = 1024  # the API refuses a thinking.budget_tokens below this
# Tokens a prompt may cost beyond its bytes: the tool-use system prompt the API adds, message framing.
PROMPT_OVERHEAD_TOKENS = 1024

# The web search server tool (`web_search_20250305` and later) is billed per search; a tool that does not cap
# its searches is given this many, or fewer when the budget pays for fewer.
WEB_SEARCH_TOOL_PREFIX = "web_search_"
DEFAULT_WEB_SEARCHES = 10

# Forwarded byte for byte (the gateway contract: anthropic-version and anthropic-beta unchanged). Everything
# else is dropped: x-api-key, authorization, cookies, hop-by-hop headers, content-length and -encoding (the
# body is re-encoded), x-stainless-*, x-app. The upstream client adds the key released for this call.
FORWARDED_HEADERS = frozenset({b"anthropic-version", b"anthropic-beta", b"content-type"})


@dataclass(frozen=True)
class CallPlan:
    """A call the budget admits: the body to forward, what to reserve, and the limits it was given."""

    forward_body: bytes
    reserve_microusd: int
    max_tokens: int
    thinking_budget: int | None
    requested_max_tokens: int

    @property
    def lowered(self) -> bool:
        """Whether the budget lowered max_tokens below what the client asked for."""
        return self.max_tokens < self.requested_max_tokens


def _invalid(detail: str, hint: str) -> Refusal:
    return Refusal(400, ROW_REQUEST, WHO, detail, hint)


def forward_headers(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """The request headers that are forwarded upstream, in order, values unchanged; the rest dropped."""
    return tuple((name.lower(), value) for name, value in headers if name.lower() in FORWARDED_HEADERS)


def decoded_body(headers: Iterable[tuple[bytes, bytes]], body: bytes, cap: int = MAX_BODY_BYTES) -> bytes | Refusal:
    """The body as JSON bytes: identity, or gzip inflated to at most `cap` bytes (a bomb stops at the cap)."""
    codings = [coding.strip().lower() for name, value in headers if name.lower() == b"content-encoding"
               for coding in value.split(b",") if coding.strip()]
    codings = [coding for coding in codings if coding != b"identity"]
    if not codings:
        return body if len(body) <= cap else _too_large(cap)
    if codings not in ([b"gzip"], [b"x-gzip"]):
        listed = ", ".join(coding.decode("latin-1") for coding in codings)
        return _invalid(f"content-encoding {shown(listed)} is not accepted", "send the body as is, or gzip it once")
    return _gunzip(body, cap)


def _too_large(cap: int) -> Refusal:
    return Refusal(413, ROW_REQUEST, WHO, f"the request body is over {cap} bytes", "send a smaller request")


def _gunzip(body: bytes, cap: int) -> bytes | Refusal:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing only
    pieces: list[bytes] = []
    size = 0
    pending = body
    try:
        while pending and not inflater.eof:
            # Never ask for more than one byte past the cap: a bomb is refused, not inflated.
            piece = inflater.decompress(pending, min(_INFLATE_STEP, cap + 1 - size))
            pieces.append(piece)
            size += len(piece)
            if size > cap:
                return _too_large(cap)
            pending = inflater.unconsumed_tail
    except zlib.error as exc:
        return _invalid(f"the gzip body is corrupt: {exc}", "send a valid gzip body")
    if not inflater.eof:
        return _invalid("the gzip body is truncated", "send the whole gzip body")
    if inflater.unused_data:
        return _invalid("bytes follow the gzip body's end", "send one gzip member and nothing after it")
    return b"".join(pieces)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def read_request(body: bytes, endpoint: str) -> dict[str, Any] | Refusal:
    """The request as a JSON object with a `model` (and, for a message, a `max_tokens`), or a 400 saying why."""
    try:
        request = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        detail = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _invalid(f"the body is not JSON: {detail}", "send a JSON object (the Messages API's request)")
    if not isinstance(request, dict):
        return _invalid(f"the body is a JSON {_JSON_KINDS[type(request)]}, not an object", "send a JSON object")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        return _invalid("model: a model name is required", "set `model` to a model the manifest allows")
    if endpoint != "messages":
        return request
    max_tokens = request.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return _invalid(f"max_tokens: {shown(max_tokens)} is not a positive whole number", "set `max_tokens`")
    stream = request.get("stream", False)
    if not isinstance(stream, bool):
        return _invalid(f"stream: {shown(stream)} is not true or false", "set `stream` to true or false")
    return request


def model_allowed(model: str, allowed: frozenset[str] | None) -> bool:
    """Whether the `models` row admits `model`: its exact name or its undated alias (None admits every model)."""
    return allowed is None or model in allowed or undated(model) in allowed


def model_price(model: str, allowed: frozenset[str] | None, table: Mapping[str, Price]) -> Price | Refusal:
    """The model's price when the `models` row allows it and it has one; else a 404 naming the row."""
    if not model_allowed(model, allowed):
        return Refusal(404, ROW_MODELS, WHO, f"model {shown(model)} is not in the models this session allows",
                       f"add {shown(model)} to {ROW_MODELS}, or ask for one of {sorted(allowed or ())}")
    return price_for(table, model)


def listed_models(allowed: frozenset[str] | None, table: Mapping[str, Price]) -> list[str]:
    """What GET /v1/models lists: the models the row allows that have a price (all priced ones without a row)."""
    if allowed is None:
        return sorted(table)
    return sorted(name for name in allowed if not isinstance(price_for(table, name), Refusal))


def estimate_input_tokens(body: bytes) -> int:
    """An upper bound on the prompt's tokens for text and inline images: a token is at least one byte of the
    body, plus the API's own additions. Not a bound for images or documents fetched by URL (the decisions page)."""
    return len(body) + PROMPT_OVERHEAD_TOKENS


def plan_call(body: Mapping[str, Any], price: Price, remaining_microusd: int, input_tokens_estimate: int,
              floor_tokens: int) -> CallPlan | Refusal:
    """Reserve the input at its dearest rate and output at max_tokens lowered to what remains; 402 below the floor.

    `thinking.budget_tokens` is lowered with max_tokens to stay below it, and a web search tool's `max_uses` is
    set to what remains after the input and the floor's output. The provider then enforces every cap.
    """
    requested = body["max_tokens"]
    floor_out = min(floor_tokens, requested)
    input_exact = input_tokens_estimate * price.dearest_input(input_tokens_estimate)
    output_rate = price.band(input_tokens_estimate).output
    searches = _planned_searches(body.get("tools"), remaining_microusd - input_exact - floor_out * output_rate)
    if isinstance(searches, Refusal):
        return searches
    tools, search_microusd = searches
    left = remaining_microusd - input_exact - search_microusd
    affordable = math.floor(left / output_rate) if output_rate else requested
    max_tokens = max(0, min(requested, affordable))
    reserve = math.ceil(input_exact + max_tokens * output_rate) + search_microusd
    if max_tokens < floor_out or reserve > remaining_microusd:
        return _budget_refusal(remaining_microusd, input_exact, output_rate, floor_out)
    thinking = _lowered_thinking(body.get("thinking"), max_tokens, lowered=max_tokens < requested)
    if isinstance(thinking, Refusal):
        return thinking
    forward = dict(body, max_tokens=max_tokens)
    budget_tokens = None
    if thinking is not None:
        forward["thinking"], budget_tokens = thinking
    if tools is not None:
        forward["tools"] = tools
    return CallPlan(_encode(forward), reserve, max_tokens, budget_tokens, requested)


def _planned_searches(tools: object, money: Fraction) -> tuple[list[Any] | None, int] | Refusal:
    """The tools with each web search's `max_uses` set to what `money` pays (None: unchanged), and their cost."""
    if not isinstance(tools, list) or not any(_is_web_search(tool) for tool in tools):
        return None, 0
    planned: list[Any] = []
    cost = 0
    for tool in tools:
        if not _is_web_search(tool):
            planned.append(tool)
            continue
        wanted = tool.get("max_uses", DEFAULT_WEB_SEARCHES)
        if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 1:
            return _invalid(f"tools: max_uses {shown(wanted)} is not a positive whole number", "set `max_uses`")
        uses = min(wanted, max(0, math.floor((money - cost) / WEB_SEARCH_MICROUSD)))
        if uses < 1:
            return Refusal(402, ROW_BUDGET, WHO, f"the session's budget cannot pay a web search "
                           f"({WEB_SEARCH_MICROUSD} µUSD) besides the call's input and its least output",
                           f"raise {ROW_BUDGET} for the next session, or send the request without web search")
        planned.append(dict(tool, max_uses=uses))
        cost += uses * WEB_SEARCH_MICROUSD
    return planned, cost


def _is_web_search(tool: object) -> bool:
    return isinstance(tool, Mapping) and str(tool.get("type", "")).startswith(WEB_SEARCH_TOOL_PREFIX)


def _budget_refusal(remaining: int, input_exact: Fraction, output_rate: Fraction, tokens: int) -> Refusal:
    needed = math.ceil(input_exact + tokens * output_rate)
    return Refusal(402, ROW_BUDGET, WHO,
                   f"the session's budget has {max(0, remaining)} µUSD left; this call needs {needed} µUSD "
                   f"(its input at the dearest rate and {tokens} output tokens)",
                   f"raise {ROW_BUDGET} for the next session, or send a shorter request")


def _lowered_thinking(thinking: object, max_tokens: int, *, lowered: bool) -> _Thinking | Refusal:
    """`thinking` with budget_tokens below max_tokens (when max_tokens was lowered); None when it has no budget."""
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None  # absent, disabled or adaptive: no budget_tokens to keep under max_tokens
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        return _invalid(f"thinking.budget_tokens: {shown(budget)} is not a positive whole number",
                        "set `thinking.budget_tokens`")
    if not lowered or budget < max_tokens:
        return dict(thinking), budget
    if max_tokens - 1 < THINKING_MIN_TOKENS:
        return Refusal(402, ROW_BUDGET, WHO,
                       f"the session's budget pays for {max_tokens} output tokens, too few for thinking "
                       f"(budget_tokens is at least {THINKING_MIN_TOKENS} and below max_tokens)",
                       f"raise {ROW_BUDGET} for the next session, or send the request without thinking")
    return dict(thinking, budget_tokens=max_tokens - 1), max_tokens - 1


def _encode(request: Mapping[str, Any]) -> bytes:
    # What was checked is what is forwarded: one parse, one encoding (a duplicate key cannot mean two things).
    try:
        return json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: keep it escaped
        return json.dumps(request, separators=(",", ":")).encode()
