"""TLS over a trio byte stream, through memory BIOs, that hands back everything already decrypted per receive.

trio's SSLStream returns one TLS record (16 KiB at most) per `receive_some`, so relaying a body costs a turn of
the event loop, an h11 event and a socket send per 16 KiB. This stream reads up to RECEIVE bytes from its
transport and decrypts every whole record in them before it returns: one turn per read instead of one per
record (bench/inject_bench.py, the door's CPU per MB). An EOF without close_notify is an EOF, as trio's
`https_compatible=True` reads it: HTTP/1.1 framing, not TLS, says whether the body was whole.
"""

from __future__ import annotations

import contextlib
import ssl

import trio

RECEIVE = 256 * 1024


class DrainingTls(trio.abc.Stream):
    """A TLS client or server over `transport`; `first` is what of the peer's bytes was read already."""

    def __init__(self, transport: trio.abc.Stream, context: ssl.SSLContext, *, server_side: bool = False,
                 server_hostname: str | None = None, first: bytes = b"") -> None:
        self.transport = transport
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side,
                                     server_hostname=server_hostname)
        if first:
            self._incoming.write(first)
        self._eof = False

    def selected_alpn_protocol(self) -> str | None:
        """The protocol ALPN chose, once the handshake is done."""
        return self._tls.selected_alpn_protocol()

    async def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            await self.transport.send_all(data)

    async def _fill(self) -> None:
        data = await self.transport.receive_some(RECEIVE)
        if data:
            self._incoming.write(bytes(data))
        else:
            self._incoming.write_eof()
            self._eof = True

    async def do_handshake(self) -> None:
        """The handshake; ssl.SSLError (a verification failure included) or trio.BrokenResourceError if it fails."""
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush()
                if self._eof:
                    raise trio.BrokenResourceError("the peer closed during the TLS handshake") from None
                await self._fill()
                continue
            except ssl.SSLError:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._flush()  # the alert saying why, so the peer's error names it too
                raise
            await self._flush()
            return

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt `data` and send every record it made."""
        if data:
            self._tls.write(data)
        await self._flush()

    async def wait_send_all_might_not_block(self) -> None:
        await self.transport.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Every plaintext byte the records read so far hold (up to `max_bytes`); b"" at the end of the stream."""
        limit = max_bytes or RECEIVE
        chunks: list[bytes] = []
        size = 0
        did_io = False
        while size < limit:
            try:
                chunk = self._tls.read(limit - size)
            except ssl.SSLWantReadError:
                await self._flush()  # a post-handshake message (a ticket, a key update) may need an answer
                if chunks or self._eof:
                    break
                await self._fill()
                did_io = True
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if not did_io:
            await trio.lowlevel.checkpoint()
        return b"".join(chunks)

    async def aclose(self) -> None:
        await self.transport.aclose()
