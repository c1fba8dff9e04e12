"""The twin as an `Upstream`: the door calls it in process, as it would call the provider over HTTPS."""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio

from doors.model._upstream import UpstreamRequest, UpstreamResponse
from doors.model.twin._script import TwinScript
from doors.model.twin._twin import Answer, Twin, TwinStatistics

TWIN_NAME = "sharness.model.anthropic.twin"


async def paced(answer: Answer) -> AsyncIterator[bytes]:
    """The answer's body pieces, each after the answer's pause (but the first); a cut just stops early."""
    for index, piece in enumerate(answer.pieces):
        if index and answer.delay_s:
            await trio.sleep(answer.delay_s)
        else:
            await trio.lowlevel.checkpoint()
        yield piece


class TwinUpstream:
    """The built-in twin of the Messages API, deterministic, scripted by `script` (None: the defaults)."""

    name = TWIN_NAME

    def __init__(self, script: TwinScript | None = None) -> None:
        self.twin = Twin(script)

    def statistics(self) -> TwinStatistics:
        """What the twin has answered so far."""
        return self.twin.statistics()

    async def exchange(self, request: UpstreamRequest) -> UpstreamResponse:
        """Answer `request`; the body is paced as the script says (a slow stream sleeps between events)."""
        await trio.lowlevel.checkpoint()
        answer = self.twin.answer(request.method, request.path, request.headers, request.body)
        body = paced(answer)
        return UpstreamResponse(answer.status, answer.headers, body, closers=[body])

    async def aclose_response(self, response: UpstreamResponse) -> None:
        """Stop the response's body where it is (nothing else is held)."""
        for closer in response.closers:
            aclose = getattr(closer, "aclose", None)
            if aclose is not None:
                await aclose()
        await trio.lowlevel.checkpoint()
