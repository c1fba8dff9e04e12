"""The twin's prompt cache: which prompt prefixes it has seen, so a repeated prefix is a cache read. Pure.

A request's longest breakpoint whose prefix the twin has seen is read from the cache; the tokens from there to
its last breakpoint are written, each stretch at the TTL of the breakpoint that closes it; the rest is
`input_tokens`. Unlike the API, nothing expires with time and there is no minimum cacheable length: the
same requests in the same order get the same usage. At most MAX_PREFIXES are kept (the oldest go first).
"""

from __future__ import annotations

from collections import OrderedDict

from doors.model._usage import Usage
from doors.model.twin._tokens import Prompt

MAX_PREFIXES = 4096


class PromptCache:
    """Prefix digests seen, oldest first."""

    def __init__(self, max_prefixes: int = MAX_PREFIXES) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._max = max_prefixes

    def input_usage(self, prompt: Prompt) -> Usage:
        """How `prompt`'s input splits into plain input, cache writes and cache reads (no output yet)."""
        read = max((mark.tokens for mark in prompt.breakpoints if mark.digest in self._seen), default=0)
        written = {"5m": 0, "1h": 0}
        start = read
        for mark in prompt.breakpoints:
            if mark.tokens > start:
                written[mark.ttl] += mark.tokens - start
                start = mark.tokens
        plain = prompt.tokens - read - written["5m"] - written["1h"]
        return Usage(plain, written["5m"], written["1h"], read)

    def remember(self, prompt: Prompt) -> None:
        """Record `prompt`'s breakpoints as cached."""
        for mark in prompt.breakpoints:
            self._seen[mark.digest] = None
            self._seen.move_to_end(mark.digest)
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)
