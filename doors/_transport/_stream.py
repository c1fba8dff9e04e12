"""A TLS stream over any trio stream, driving an ssl.SSLObject through memory BIOs.

Unlike trio.SSLStream it always sends what OpenSSL wrote before failing, so a refused peer receives the
TLS alert (unknown CA, certificate required, expired...) instead of a reset. It serves one task at a
time: our HTTP loops never send and receive on one connection concurrently.
"""

from __future__ import annotations

import contextlib
import ssl

import trio
from OpenSSL import SSL

from doors._transport._pyossl import IncomingBio, OutgoingBio, PyOpenSSLObject, memory_connection

RECEIVE_BYTES = 64 * 1024


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

    async def _flush(self) -> None:
        pending = self._outgoing.read()
        if pending:
            await self.transport.send_all(pending)

    async def _fill(self) -> None:
        data = await self.transport.receive_some(RECEIVE_BYTES)
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    async def _flush_after_failure(self) -> None:
        """Send the alert OpenSSL queued, if the transport still takes it."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self._flush()

    async def do_handshake(self) -> None:
        """Run the handshake; TlsFailure after sending any alert OpenSSL queued."""
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
            await self._flush()
            return

    async def _receive_or_fail(self) -> None:
        try:
            await self._fill()
        except (trio.BrokenResourceError, OSError) as exc:
            raise TlsFailure(None, f"the peer reset the connection ({exc})") from exc

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Return decrypted bytes, b"" once the peer closed; TlsFailure on an alert or a reset."""
        while not self._eof:
            try:
                return self.ssl_object.read(max_bytes or RECEIVE_BYTES)
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

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt and send all of `data`."""
        try:
            self.ssl_object.write(data)
        except ssl.SSLError as exc:
            raise TlsFailure(exc, str(exc)) from exc
        await self._flush()

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
