"""A route's takeover of the connection: the stream, replaying the bytes the server already read."""

from __future__ import annotations

import trio

RECEIVE_BYTES = 64 * 1024


class ReplayStream(trio.abc.Stream):
    """`stream`, whose first reads return `already` (the request head and what followed it) before new bytes."""

    def __init__(self, already: bytes, stream: trio.abc.Stream) -> None:
        self._already = already
        self.stream = stream

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The replayed bytes first (at most `max_bytes` at a time), then the stream's."""
        if self._already:
            size = max_bytes or RECEIVE_BYTES
            piece, self._already = self._already[:size], self._already[size:]
            return piece
        return bytes(await self.stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()
