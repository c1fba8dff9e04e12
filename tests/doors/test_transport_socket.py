"""The door's TLS on its own socket (SocketTlsStream), and the clients' last flight held for their first send."""

from __future__ import annotations

import os
import socket
import ssl

import pytest
import trio
from OpenSSL import SSL
from OpenSSL._util import lib as _lib

from doors._transport import AsyncDoorClient, BlockingTls, client_context_from_file, fresh_exchange, server_context
from doors._transport._socket_stream import SocketTlsStream
from doors._transport._stream import TlsFailure, TlsStream
from doors._transport.testing import Session, doors_in_thread, scratch_dir, session
from doors.client import DoorClient
from pki.testing import SessionPKI


async def test_a_pyopenssl_door_on_a_socket_drives_the_socket_itself() -> None:
    async with session() as s:
        ours, theirs = trio.socket.socketpair()
        with ours, theirs:
            door = TlsStream.wrap(trio.SocketStream(ours), s.server_ctx("fs"), server_side=True)
            assert isinstance(door, SocketTlsStream)
            client = TlsStream.wrap(trio.SocketStream(theirs), s.client_ctx("app"), server_side=False)
            assert not isinstance(client, SocketTlsStream)  # clients keep memory BIOs (see its docstring)
            stdlib = TlsStream.wrap(trio.SocketStream(ours), server_context(s.pki.bundle_pem(), "stdlib"),
                                    server_side=True)
            assert not isinstance(stdlib, SocketTlsStream)


def _hello_then_gone(path: str, ctx: SSL.Context) -> None:
    """Send a ClientHello, leave the door's answer unread and close: the door's next read is ECONNRESET."""
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(path)
    conn = SSL.Connection(ctx, None)
    conn.set_connect_state()
    try:
        conn.do_handshake()
    except SSL.WantReadError:
        raw.sendall(conn.bio_read(65536))
    raw.recv(1)  # the door has answered: its flight is now unread in our buffer
    raw.close()


async def test_clients_that_reset_mid_handshake_are_told_apart_and_harm_no_other() -> None:
    # OpenSSL reports the reset as a system call error (ECONNRESET), which the door records as a reset,
    # not as a TLS refusal with OpenSSL's words; the next client is served as usual.
    async with session() as s, trio.open_nursery() as nursery:
        path = await s.start_door(nursery, "fs")
        ctx = s.client_ctx("app")
        assert isinstance(ctx, SSL.Context)
        dial = s.dial("fs", path, ctx, "app")
        for _ in range(3):
            await trio.to_thread.run_sync(_hello_then_gone, path, ctx)
            response, _ = await fresh_exchange(dial, "GET", "/v0/whoami")
            assert response.json()["peer_role"] == "app"
        resets = [e for e in s.events if e["kind"] == "transport.refused"]
        assert len(resets) == 3 and all("reset" in e["reason"] for e in resets)
        nursery.cancel_scope.cancel()


async def test_a_client_that_left_first_breaks_no_kept_alive_connection() -> None:
    # Each fresh client closes before the door's close_notify goes out, so that write fails (EPIPE) on the
    # door's only thread. The kept connection must not be the one that pays: the door keeps it open (the
    # client would otherwise reconnect quietly, so the test holds on to the connection object).
    async with session() as s, trio.open_nursery() as nursery:
        path = await s.start_door(nursery, "fs")
        dial = s.dial("fs", path, s.client_ctx("app"), "app")
        async with AsyncDoorClient(dial) as kept:
            assert (await kept.request("POST", "/v0/echo", body=b"one")).body == b"one"
            held = kept._tls
            for _ in range(3):
                await fresh_exchange(dial, "GET", "/v0/whoami")
                await trio.sleep(0.01)  # let the door finish closing (its failing close_notify)
                assert (await kept.request("POST", "/v0/echo", body=b"again")).body == b"again"
                assert kept._tls is held
        nursery.cancel_scope.cancel()


async def test_a_held_last_flight_still_goes_out_when_the_client_only_reads() -> None:
    # The client's last flight holds its certificate: a door that never got it could not refuse it.
    async with session() as s, trio.open_nursery() as nursery:
        path = await s.start_door(nursery, "fs")
        ctx = client_context_from_file(s.pki.bundle_pem(), s.pem_path("odd", s.pki.odd_leaf("other_ca")))
        tls = TlsStream.wrap(await trio.open_unix_socket(path), ctx, server_side=False)
        await tls.do_handshake(hold_last_flight=True)  # TLS 1.3: the client is done before the door decides
        with trio.fail_after(5), pytest.raises(TlsFailure) as caught:
            await tls.receive_some()
        assert caught.value.ssl_error is not None and caught.value.ssl_error.reason == "TLSV1_ALERT_UNKNOWN_CA"
        await tls.aclose()
        nursery.cancel_scope.cancel()


def test_the_blocking_client_sends_its_held_flight_when_it_reads() -> None:
    with scratch_dir() as directory:
        s = Session(SessionPKI.create(), directory)
        with doors_in_thread(s, {"fs": "fs"}) as doors:
            ctx = client_context_from_file(s.pki.bundle_pem(), s.pem_path("odd", s.pki.odd_leaf("other_ca")))
            assert isinstance(ctx, SSL.Context)
            raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            raw.settimeout(5)
            raw.connect(doors["fs"])
            tls = BlockingTls.connect(raw, ctx, hold_last_flight=True)
            with pytest.raises(ssl.SSLError) as caught:
                tls.recv(1024)
            assert caught.value.reason == "TLSV1_ALERT_UNKNOWN_CA"
            tls.close()


async def test_a_bulk_body_goes_both_ways_whole_async() -> None:
    body = os.urandom(600_000)  # many full records: the door and the client take them several at a time
    async with session() as s, trio.open_nursery() as nursery:
        path = await s.start_door(nursery, "fs")
        async with AsyncDoorClient(s.dial("fs", path, s.client_ctx("app"), "app")) as client:
            for _ in range(2):
                assert (await client.request("POST", "/v0/echo", body=body)).body == body
        nursery.cancel_scope.cancel()


def _echoed_twice_by_a_blocking_client(body: bytes) -> None:
    with scratch_dir() as directory:
        s = Session(SessionPKI.create(), directory)
        with doors_in_thread(s, {"fs": "fs"}) as doors:
            bundle = s.pem_path("bundle", s.pki.bundle_pem())
            with DoorClient.from_files("fs", doors["fs"], s.svid_path("app"), bundle, s.pki.trust_domain,
                                       s.pki.session_id) as client:
                for _ in range(2):
                    assert client.request("POST", "/v0/echo", body=body).body == body


def test_a_bulk_body_goes_both_ways_whole_blocking() -> None:
    _echoed_twice_by_a_blocking_client(os.urandom(600_000))


async def test_one_send_writes_every_record_the_socket_takes_and_a_slow_reader_gets_it_all_in_order() -> None:
    body = os.urandom(4 << 20)  # far past a socketpair's buffer: the door's send waits for the reader many times
    async with session() as s:
        ours, theirs = trio.socket.socketpair()
        with ours, theirs:
            door = TlsStream.wrap(trio.SocketStream(ours), s.server_ctx("fs"), server_side=True)
            assert isinstance(door, SocketTlsStream)
            # pyOpenSSL's partial writes are off on the door's connection (SSL_set_mode adds 0, says the mode)
            assert not _lib.SSL_set_mode(door._conn._ssl, 0) & _lib.SSL_MODE_ENABLE_PARTIAL_WRITE
            client = TlsStream.wrap(trio.SocketStream(theirs), s.client_ctx("app"), server_side=False)
            received = bytearray()

            async def read_slowly() -> None:
                while len(received) < len(body):
                    received.extend(await client.receive_some(7000))
                    if len(received) % 5 == 0:
                        await trio.sleep(0)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(door.do_handshake)
                nursery.start_soon(client.do_handshake)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_slowly)
                await door.send_all(body)
                await door.send_all(b"and after it")
            assert bytes(received[:len(body)]) == body


def test_the_blocking_client_decrypts_into_one_buffer_many_records_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    body = os.urandom(600_000)
    sizes: list[int] = []
    real = BlockingTls.recv_into

    def recording(tls: BlockingTls, buffer: bytearray | memoryview, nbytes: int = 0) -> int:
        sizes.append(real(tls, buffer, nbytes))
        return sizes[-1]

    monkeypatch.setattr(BlockingTls, "recv_into", recording)
    _echoed_twice_by_a_blocking_client(body)
    assert max(sizes) > 16 * 1024  # the records already received come in the same call
