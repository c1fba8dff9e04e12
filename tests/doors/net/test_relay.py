"""The splice relay: bytes both ways, half-close carried across, idle tunnels ended, counts right."""

from __future__ import annotations

import socket

import trio
import trio.testing

from doors._http import ReplayStream
from doors.net._relay import relay


def pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    left, right = trio.socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return trio.SocketStream(left), trio.SocketStream(right)


async def read_all(stream: trio.SocketStream) -> bytes:
    data = b""
    while chunk := await stream.receive_some(1 << 20):
        data += chunk
    return data


async def test_both_ways_and_half_close() -> None:
    app, door_side = pair()
    door_up, host = pair()
    payload_up, payload_down = b"u" * 3_000_000, b"d" * 5_000_001
    results = {}

    async def app_side() -> None:
        await app.send_all(payload_up)
        await app.send_eof()
        results["app"] = await read_all(app)

    async def host_side() -> None:
        results["host"] = await read_all(host)  # ends when the app's EOF is carried across
        await host.send_all(payload_down)
        await host.send_eof()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(app_side)
        nursery.start_soon(host_side)
        outcome = await relay(door_side, door_up, idle_s=60)
    assert results == {"app": payload_down, "host": payload_up}
    assert (outcome.up, outcome.down, outcome.ended) == (len(payload_up), len(payload_down), "closed")


async def test_idle_tunnel_ends(autojump_clock: trio.testing.MockClock) -> None:
    app, door_side = pair()
    door_up, host = pair()
    await app.send_all(b"hello")
    outcome = await relay(door_side, door_up, idle_s=30)
    assert outcome.ended == "idle-timeout" and outcome.up == 5
    assert await host.receive_some(10) == b"hello"


async def test_reset_ends_both_directions() -> None:
    app, door_side = pair()
    door_up, host = pair()
    await host.aclose()
    await app.send_all(b"x" * 100_000)
    outcome = await relay(door_side, door_up, idle_s=60)
    assert outcome.ended == "reset"


async def test_a_client_that_is_not_a_socket_is_copied_and_ends_at_the_hosts_eof() -> None:
    app, inner = trio.testing.memory_stream_pair()
    door_side = ReplayStream(b"", inner)  # like the door's TLS stream: no fd to splice, no half-close
    door_up, host = pair()
    results = {}

    async def app_side() -> None:
        await app.send_all(b"u" * 100_000)
        await app.send_eof()

    async def host_side() -> None:
        results["host"] = await read_all(host)  # ends when the app's EOF is carried up
        await host.send_all(b"d" * 7)
        await host.send_eof()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(app_side)
        nursery.start_soon(host_side)
        outcome = await relay(door_side, door_up, idle_s=60)
    await door_side.aclose()
    assert await app.receive_some(100) == b"d" * 7 and await app.receive_some(100) == b""
    assert results == {"host": b"u" * 100_000}
    assert (outcome.up, outcome.down, outcome.ended) == (100_000, 7, "closed")
