"""HTTP limits and refusals through the real mTLS transport: malformed input, big bodies, slow clients."""

from __future__ import annotations

import socket
from functools import partial

import pytest
import trio

from doors._http import ClientConnection, Limits
from doors._transport import (
    AsyncDoorClient,
    Dial,
    DoorRefused,
    client_context_from_file,
    connect,
    serve_mtls,
    unix_listener,
)
from doors._transport.testing import Session, session, tiny_router
from pki.edges import EdgePolicy

SMALL = Limits(max_body_bytes=64 * 1024, max_header_bytes=4096, idle_timeout_s=2, head_timeout_s=1,
               body_grace_s=0.5, body_min_bytes_per_s=1024)


async def _raw_exchange(dial: Dial, data: bytes) -> bytes:
    """Send raw bytes after a checked handshake and return all the door answers until it closes."""
    tls = await connect(dial)
    await tls.send_all(data)
    received = bytearray()
    while piece := await tls.receive_some():
        received += piece
    await tls.aclose()
    return bytes(received)


async def _door(s: Session, nursery: trio.Nursery, role: str = "fs") -> str:
    path = f"{s.directory}/{role}.sock"
    await nursery.start(partial(serve_mtls, unix_listener(path), s.server_ctx(role), s.pki.identity(role),
                                EdgePolicy(s.edges), tiny_router(role), s.events.append, limits=SMALL))
    return path


async def test_malformed_http_over_tls_is_400_and_closed() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = await _door(s, nursery)
        dial = s.dial("fs", path, s.client_ctx("app"), "app")
        answer = await _raw_exchange(dial, b"\x00\x01 nonsense\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400 ")
        assert b'"who":"fs"' in answer
        nursery.cancel_scope.cancel()


async def test_oversized_head_over_tls_is_431() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = await _door(s, nursery)
        dial = s.dial("fs", path, s.client_ctx("app"), "app")
        head = b"GET /v0/whoami HTTP/1.1\r\nHost: fs\r\nX-Big: " + b"a" * 8000 + b"\r\n\r\n"
        answer = await _raw_exchange(dial, head)
        assert answer.startswith(b"HTTP/1.1 431 ")
        nursery.cancel_scope.cancel()


async def test_oversized_body_over_tls_is_413() -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = await _door(s, nursery)
        async with AsyncDoorClient(s.dial("fs", path, s.client_ctx("app"), "app")) as client:
            response = await client.request("POST", "/v0/echo", body=b"x" * 100_000)
        assert response.status == 413 and response.json()["error"] == "http.max_body_bytes"
        nursery.cancel_scope.cancel()


async def test_slow_body_over_tls_is_cut(autojump_clock: trio.testing.MockClock) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = await _door(s, nursery)
        tls = await connect(s.dial("fs", path, s.client_ctx("app"), "app"))
        http = ClientConnection("fs")
        await tls.send_all(b"POST /v0/echo HTTP/1.1\r\nHost: fs\r\nContent-Length: 5000\r\n\r\n")
        for _ in range(4):
            await tls.send_all(b"y" * 100)
            await trio.sleep(0.5)  # 200 bytes/s against a floor of 1024 bytes/s
        while (response := http.next_response()) is None:
            http.receive_data(await tls.receive_some())
        assert (response.status, response.json()["error"]) == (408, "http.body_min_bytes_per_s")
        await tls.aclose()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("refusal", ["edge", "tls"])
async def test_a_refusal_surfaces_on_the_first_request_even_with_a_large_body(refusal: str) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = await _door(s, nursery, "keys")
        if refusal == "edge":
            ctx = s.client_ctx("app")
        else:
            ctx = client_context_from_file(s.pki.bundle_pem(), s.pem_path("odd", s.pki.odd_leaf("other_ca", "net")))
        async with AsyncDoorClient(s.dial("keys", path, ctx, "app")) as client:
            with pytest.raises(DoorRefused) as caught:
                await client.request("POST", "/v0/echo", body=b"z" * 2_000_000)
        assert caught.value.refusal.who == "keys"
        assert ("edge app->keys" if refusal == "edge" else "does not trust the CA") in caught.value.refusal.detail
        assert len([e for e in s.events if e["kind"] == "transport.refused"]) == 1
        nursery.cancel_scope.cancel()


async def test_the_async_client_reconnects_after_the_door_closed_it(autojump_clock: trio.testing.MockClock) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        path = await _door(s, nursery)
        async with AsyncDoorClient(s.dial("fs", path, s.client_ctx("app"), "app")) as client:
            assert (await client.request("GET", "/v0/whoami")).ok
            first = client._tls
            await trio.sleep(SMALL.idle_timeout_s + 1)  # the door's idle timeout closes the connection
            assert (await client.request("POST", "/v0/echo", body=b"again")).body == b"again"
            assert client._tls is not first
        nursery.cancel_scope.cancel()


async def test_a_door_sets_the_send_buffer_its_limits_ask_for(monkeypatch: pytest.MonkeyPatch) -> None:
    buffers: list[int] = []
    real = trio.SocketStream.setsockopt

    def recording(stream: trio.SocketStream, level: int, option: int, value: int) -> None:
        real(stream, level, option, value)
        if option == socket.SO_SNDBUF:
            buffers.append(stream.socket.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))

    monkeypatch.setattr(trio.SocketStream, "setsockopt", recording)
    async with session() as s, trio.open_nursery() as nursery:
        for index, limits in enumerate((Limits(), Limits(send_buffer_bytes=1 << 20))):
            path = f"{s.directory}/fs-{index}.sock"
            await nursery.start(partial(serve_mtls, unix_listener(path), s.server_ctx("fs"), s.pki.identity("fs"),
                                        EdgePolicy(s.edges), tiny_router("fs"), s.events.append, limits=limits))
            async with AsyncDoorClient(s.dial("fs", path, s.client_ctx("app"), "app")) as client:
                assert (await client.request("POST", "/v0/echo", body=b"x")).status == 200
        # the default leaves the kernel's own; the kernel doubles what is set (its bookkeeping)
        assert buffers == [2 << 20]
        nursery.cancel_scope.cancel()
