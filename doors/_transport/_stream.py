"""A TLS stream over any trio stream, driving an ssl.SSLObject through memory BIOs.

Unlike trio.SSLStream it always sends what OpenSSL wrote before failing, so a refused peer receives the
TLS alert (unknown CA, certificate required, expired...) instead of a reset. It serves one task at a
time: our HTTP loops never send and receive on one connection concurrently. On a socket it reads and
writes the fd itself; a door on pyOpenSSL gets SocketTlsStream (_socket_stream.py) instead, where
OpenSSL does the socket's I/O.
"""

from __future__ import annotations

import contextlib
import os
import ssl

import trio
from OpenSSL import SSL

from doors._transport._pyossl import IncomingBio, OutgoingBio, PyOpenSSLObject, memory_connection

RECEIVE_BYTES = 64 * 1024
FULL_RECORD = 16 * 1024  # TLS's largest plaintext record: one of these usually has others behind it


class TlsFailure(Exception):
    """The TLS layer failed: `ssl_error` is OpenSSL's error (an alert we received or a check we failed)."""

    def __init__(self, ssl_error: ssl.SSLError | None, detail: str) -> None:
        super().__init__(detail)
        self.ssl_error = ssl_error


class TlsStream(trio.abc.Stream):
    """TLS on `transport` (a trio SocketStream over a Unix socket or TCP)."""

    def __init__(self, transport: trio.abc.Stream, ssl_object: ssl.SSLObject | PyOpenSSLObject,
                 incoming: ssl.MemoryBIO | IncomingBio, outgoing: ssl.MemoryBIO | OutgoingBio) -> None:
        self.transport = transport
        self.ssl_object = ssl_object
        self._incoming = incoming
        self._outgoing = outgoing
        self._eof = False
        # On a socket the stream reads and writes the fd itself: a trio socket operation per flight costs
        # more than the flight's records (docs/decisions/bench.md). Any other stream goes through trio.
        self._socket = transport.socket if isinstance(transport, trio.SocketStream) else None
        self._waits = 0
        self._deferred: ssl.SSLError | None = None

    @classmethod
    def wrap(cls, transport: trio.abc.Stream, ctx: ssl.SSLContext | SSL.Context, *, server_side: bool,
             session: ssl.SSLSession | SSL.Session | None = None) -> TlsStream:
        """Wrap `transport` with the backend of `ctx`; a client may offer an earlier `session` to resume it.

        A door on pyOpenSSL drives its socket itself (SocketTlsStream); anything else goes through memory BIOs.
        """
        if isinstance(ctx, SSL.Context):
            if server_side and isinstance(transport, trio.SocketStream):
                from doors._transport._socket_stream import SocketTlsStream  # it subclasses this one

                return SocketTlsStream.accept(transport, ctx)
            return cls(transport, *memory_connection(ctx, server_side=server_side, session=session))
        if isinstance(session, SSL.Session):
            raise TypeError("an ssl.SSLContext cannot resume a pyOpenSSL session: offer its own session")
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        ssl_object = ctx.wrap_bio(incoming, outgoing, server_side=server_side, session=session)
        return cls(transport, ssl_object, incoming, outgoing)

    def _fd(self) -> int:
        """The socket's fd, asked each time (a closed socket says -1: its number may be another's by now)."""
        assert self._socket is not None
        fd = self._socket.fileno()
        if fd < 0:
            raise trio.ClosedResourceError("the TLS stream's socket is closed")
        return fd

    async def _flush(self) -> None:
        pending = self._outgoing.read()
        if not pending:
            return
        if self._socket is None:
            await self.transport.send_all(pending)
            return
        view = memoryview(pending)
        while view:
            try:
                view = view[os.write(self._fd(), view):]
            except BlockingIOError:
                self._waits += 1
                await trio.lowlevel.wait_writable(self._socket)
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise trio.BrokenResourceError(f"the peer closed the connection ({exc.strerror})") from exc

    async def _fill(self) -> None:
        if self._socket is None:
            data = await self.transport.receive_some(RECEIVE_BYTES)
        else:
            while True:
                try:
                    data = os.read(self._fd(), RECEIVE_BYTES)
                    break
                except BlockingIOError:
                    self._waits += 1
                    await trio.lowlevel.wait_readable(self._socket)
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    async def _checkpoint_unless_waited(self, waits_before: int) -> None:
        """Each operation is one trio checkpoint, as a trio stream's is: yield if it never waited."""
        if self._waits == waits_before:
            await trio.lowlevel.cancel_shielded_checkpoint()

    async def _flush_after_failure(self) -> None:
        """Send the alert OpenSSL queued, if the transport still takes it."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self._flush()

    async def do_handshake(self, *, hold_last_flight: bool = False) -> None:
        """Run the handshake; TlsFailure after sending any alert OpenSSL queued.

        With `hold_last_flight` a client that sends at once keeps its last flight (its Finished) to go out
        with its first send, in one write: the door then finds the request beside the Finished. The next
        send, receive or close sends it.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        waits = self._waits
        while True:
            try:
                self.ssl_object.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush()
                await self._receive_or_fail()
                continue
            except ssl.SSLError as exc:
                await self._flush_after_failure()
                raise TlsFailure(exc, str(exc)) from exc
            if not hold_last_flight:
                await self._flush()
            await self._checkpoint_unless_waited(waits)
            return

    async def _receive_or_fail(self) -> None:
        try:
            await self._fill()
        except (trio.BrokenResourceError, OSError) as exc:
            raise TlsFailure(None, f"the peer reset the connection ({exc})") from exc

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Return decrypted bytes, b"" once the peer closed; TlsFailure on an alert or a reset."""
        await trio.lowlevel.checkpoint_if_cancelled()
        waits = self._waits
        data = await self._receive(max_bytes or RECEIVE_BYTES)
        await self._checkpoint_unless_waited(waits)
        return data

    async def _receive(self, max_bytes: int) -> bytes:
        while not self._eof:
            try:
                data = self._read(max_bytes)
                return self._records_behind(data, max_bytes) if len(data) >= FULL_RECORD else data
            except ssl.SSLWantReadError:
                await self._flush()
                await self._receive_or_fail()
            except ssl.SSLZeroReturnError:
                self._eof = True
            except ssl.SSLEOFError:
                self._eof = True  # closed without close_notify: HTTP framing tells truncation apart
            except ssl.SSLError as exc:
                await self._flush_after_failure()
                raise TlsFailure(exc, str(exc)) from exc
        return b""

    def _read(self, max_bytes: int) -> bytes:
        if self._deferred is not None:
            deferred, self._deferred = self._deferred, None
            raise deferred
        return self.ssl_object.read(max_bytes)

    def _records_behind(self, first: bytes, limit: int) -> bytes:
        """`first` and the full records OpenSSL already holds, up to `limit` (a bulk body in fewer steps);
        the peer's close or a failure that ends it is kept for the next receive."""
        pieces, got = [first], len(first)
        while got < limit:
            try:
                piece = self.ssl_object.read(limit - got)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLError as exc:
                self._deferred = exc
                break
            pieces.append(piece)
            got += len(piece)
            if len(piece) < FULL_RECORD:
                break
        return b"".join(pieces)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt and send all of `data`."""
        await trio.lowlevel.checkpoint_if_cancelled()
        waits = self._waits
        try:
            self.ssl_object.write(data)
        except ssl.SSLError as exc:
            raise TlsFailure(exc, str(exc)) from exc
        await self._flush()
        await self._checkpoint_unless_waited(waits)

    async def wait_send_all_might_not_block(self) -> None:
        await self.transport.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        """Send close_notify (best effort) and close the transport."""
        try:
            with trio.move_on_after(1):
                with contextlib.suppress(ssl.SSLWantReadError, ssl.SSLError):
                    self.ssl_object.unwrap()
                await self._flush()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            await self.transport.aclose()

    def peer_der(self) -> bytes | None:
        """The peer's leaf certificate (DER), also on a resumed session."""
        return self.ssl_object.getpeercert(binary_form=True)
