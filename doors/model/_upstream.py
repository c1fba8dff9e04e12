"""What the model door forwards to: one exchange with an upstream, the provider's API or the built-in twin.

The door builds an `UpstreamRequest` (the path without its query string, the headers it forwards, the body it
rewrote), and reads the `UpstreamResponse` as it arrives. A real provider is reached over HTTPS; the twin
(`doors.model.twin`) answers in process. Both implement `Upstream`, so the door cannot tell them apart except
by the name it audits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

Headers = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True)
class UpstreamRequest:
    method: bytes  # b"POST", b"GET"
    path: bytes  # b"/v1/messages": no query string
    headers: Headers  # what is forwarded (anthropic-version, anthropic-beta, content-type, the released key)
    body: bytes = b""


@dataclass
class UpstreamResponse:
    status: int
    headers: Headers
    body: AsyncIterator[bytes]  # chunks as they arrive; ends when the upstream's body ends
    closers: list[object] = field(default_factory=list)  # what aclose() must close (sockets, streams)


class Upstream(Protocol):
    name: str  # audited: "https://api.anthropic.com", "sharness.model.anthropic.twin"

    async def exchange(self, request: UpstreamRequest) -> UpstreamResponse:
        """Send `request`; return once the status and headers are known. Raises OSError when unreachable."""
        ...

    async def aclose_response(self, response: UpstreamResponse) -> None:
        """Release what `response` holds, read to its end or not (a client gone mid-stream)."""
        ...
