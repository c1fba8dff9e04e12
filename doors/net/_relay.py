"""Copy bytes both ways between two streams until both ends close or the tunnel goes idle."""

from __future__ import annotations

from dataclasses import dataclass

import trio

CHUNK = 64 * 1024


@dataclass
class RelayResult:
    """Bytes each way and how the relay ended."""

    up: int = 0
    down: int = 0
    ended: str = "closed"


async def _pump(src: trio.SocketStream, dst: trio.SocketStream, result: RelayResult, up: bool,
                scope: trio.CancelScope, idle_s: float) -> None:
    try:
        while data := await src.receive_some(CHUNK):
            await dst.send_all(data)
            if up:
                result.up += len(data)
            else:
                result.down += len(data)
            scope.deadline = trio.current_time() + idle_s
        await dst.send_eof()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        result.ended = "reset"
        scope.cancel()


async def relay(client: trio.SocketStream, upstream: trio.SocketStream, idle_s: float) -> RelayResult:
    """Relay until both directions reach EOF, one side resets, or nothing moves for `idle_s`."""
    result = RelayResult()
    with trio.CancelScope(deadline=trio.current_time() + idle_s) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pump, client, upstream, result, True, scope, idle_s)
            nursery.start_soon(_pump, upstream, client, result, False, scope, idle_s)
    if scope.cancelled_caught and result.ended == "closed":
        result.ended = "idle-timeout"
    return result
