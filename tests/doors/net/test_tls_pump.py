"""DrainingTls: a TLS stream that returns every whole record a read brought, not one record per receive."""

from __future__ import annotations

import ssl

import pytest
import trio
import trio.testing
import trustme

from doors.net._tls_pump import DrainingTls

HOST = "pump.sharness.test"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _contexts(ca: trustme.CA) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST).configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


async def test_many_records_come_back_in_one_receive(ca: trustme.CA) -> None:
    server_ctx, client_ctx = _contexts(ca)
    left, right = trio.testing.memory_stream_pair()
    server = trio.SSLStream(left, server_ctx, server_side=True)
    client = DrainingTls(right, client_ctx, server_hostname=HOST)
    body = bytes(range(256)) * 1024  # 256 KiB: sixteen records
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.do_handshake)
        await client.do_handshake()
    await server.send_all(body)
    got = await client.receive_some()
    assert len(got) > 16 * 1024 and body.startswith(got)  # more than one record's worth at once
    while len(got) < len(body):
        got += await client.receive_some()
    assert got == body
    await client.send_all(b"ping")
    assert await server.receive_some(4) == b"ping"


async def test_an_eof_without_close_notify_is_an_eof(ca: trustme.CA) -> None:
    server_ctx, client_ctx = _contexts(ca)
    left, right = trio.testing.memory_stream_pair()
    server = trio.SSLStream(left, server_ctx, server_side=True)
    client = DrainingTls(right, client_ctx, server_hostname=HOST)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.do_handshake)
        await client.do_handshake()
    await server.send_all(b"last")
    await left.aclose()  # the transport goes, no close_notify
    assert await client.receive_some() == b"last"
    assert await client.receive_some() == b""


async def test_a_server_it_does_not_trust_fails_the_handshake(ca: trustme.CA) -> None:
    server_ctx, _ = _contexts(ca)
    left, right = trio.testing.memory_stream_pair()
    server = trio.SSLStream(left, server_ctx, server_side=True)
    client = DrainingTls(right, ssl.create_default_context(), server_hostname=HOST)
    refused: list[BaseException] = []
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.do_handshake)
            await client.do_handshake()
    except* ssl.SSLCertVerificationError as group:
        refused += group.exceptions
    except* trio.BrokenResourceError as group:  # the server: the door's alert ended its handshake
        assert isinstance(group.exceptions[0].__cause__, ssl.SSLError)
    assert refused


async def test_the_replayed_first_flight_starts_the_server_side(ca: trustme.CA) -> None:
    """What the door does after it read the ClientHello for the SNI check: the bytes go in first."""
    server_ctx, client_ctx = _contexts(ca)
    left, right = trio.testing.memory_stream_pair()
    client = trio.SSLStream(left, client_ctx, server_hostname=HOST)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.do_handshake)
        first = await right.receive_some()
        server = DrainingTls(right, server_ctx, server_side=True, first=bytes(first))
        await server.do_handshake()
    await client.send_all(b"GET / HTTP/1.1\r\n\r\n")
    assert await server.receive_some() == b"GET / HTTP/1.1\r\n\r\n"
