"""The door's TlsStream on the socket itself: a pyOpenSSL connection that reads and writes the non-blocking fd.

OpenSSL calls recv/send on the socket, so no record passes through Python: trio only waits for the fd
when OpenSSL says it wants to read or write. An alert OpenSSL sends on a failed handshake goes out on
the socket the moment it is made, as with the memory BIOs. Each operation is a trio checkpoint, like
trio's own socket streams.

Doors only: after a write fails (EPIPE), OpenSSL reads nothing more on that connection. A door whose
write failed has lost its client anyway, but a client must still read the refusal a door sent while the
client's body was going out, so clients keep the memory BIOs (docs/decisions/transport.md).
"""

from __future__ import annotations

import errno
import socket
import ssl
from typing import cast

import trio
from OpenSSL import SSL
from OpenSSL._util import lib as _lib

from doors._transport._pyossl import PyOpenSSLObject, as_stdlib_error, client_or_server
from doors._transport._stream import FULL_RECORD, RECEIVE_BYTES, TlsFailure, TlsStream


def _reset(exc: SSL.SysCallError) -> bool:
    """Whether OpenSSL saw the socket fail (ECONNRESET, EPIPE...) rather than an end of stream.

    OpenSSL leaves the socket's error on this thread's queue; it is cleared, so that a later failure on
    another connection is not reported with this one's words (pyOpenSSL reads the queue for them).
    """
    _lib.ERR_clear_error()
    return bool(exc.args) and isinstance(exc.args[0], int) and exc.args[0] > 0


class SocketTlsStream(TlsStream):
    """TLS on a trio SocketStream's own fd, for a pyOpenSSL context."""

    def __init__(self, transport: trio.SocketStream, conn: SSL.Connection) -> None:
        self.transport = transport
        self.ssl_object = PyOpenSSLObject(conn)
        self._conn = conn
        self._sock = transport.socket
        self._eof = False
        self._deferred_error: SSL.Error | None = None

    @classmethod
    def accept(cls, transport: trio.SocketStream, ctx: SSL.Context) -> SocketTlsStream:
        """The door's stream for an accepted `transport` (its socket stays non-blocking)."""
        # pyOpenSSL takes any object with fileno() (it only calls SSL_set_fd); its hint says socket.socket.
        conn = SSL.Connection(ctx, cast(socket.socket, transport.socket))
        # pyOpenSSL turns partial writes on: one SSL_write per 16 KiB record, 64 Python calls a MiB. Off, one call
        # writes every record the socket takes (docs/decisions/bench.md, "shthrough"); a retry after a want-write
        # passes the same bytes, as OpenSSL asks in either mode (send_all advances only on success).
        _lib.SSL_clear_mode(conn._ssl, _lib.SSL_MODE_ENABLE_PARTIAL_WRITE)
        return cls(transport, client_or_server(conn, True, None))

    def _failure(self, exc: SSL.Error) -> TlsFailure:
        if isinstance(exc, SSL.SysCallError) and _reset(exc):
            return TlsFailure(None, f"the peer reset the connection ({exc.args[1]})")
        error = as_stdlib_error(self._conn, exc)
        return TlsFailure(error, str(error))

    async def do_handshake(self, *, hold_last_flight: bool = False) -> None:
        """Run the handshake; TlsFailure once OpenSSL failed it (its alert already sent on the socket).

        A door's last flight is its tickets, which OpenSSL writes itself: `hold_last_flight` is a client's.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                self._conn.do_handshake()
                break
            except SSL.WantReadError:
                await trio.lowlevel.wait_readable(self._sock)
            except SSL.WantWriteError:
                await trio.lowlevel.wait_writable(self._sock)
            except SSL.SysCallError as exc:
                if _reset(exc) and exc.args[0] == errno.EPIPE:  # our flight to a client that left
                    raise trio.BrokenResourceError("the peer closed during the handshake") from exc
                raise self._failure(exc) from exc
            except SSL.Error as exc:
                raise self._failure(exc) from exc
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Return decrypted bytes, b"" once the peer closed; TlsFailure on an alert or a reset.

        A full record (a bulk body) is followed by the others already on the socket, up to `max_bytes`.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        limit = max_bytes or RECEIVE_BYTES
        waited = False
        while not self._eof:
            try:
                data = self._recv(limit)
            except SSL.WantReadError:
                await trio.lowlevel.wait_readable(self._sock)
                waited = True
                continue
            except SSL.WantWriteError:
                await trio.lowlevel.wait_writable(self._sock)
                waited = True
                continue
            except SSL.ZeroReturnError:
                self._eof = True
                break
            except SSL.Error as exc:
                failure = self._failure(exc)
                if not isinstance(failure.ssl_error, ssl.SSLEOFError):
                    raise failure from exc
                self._eof = True  # closed without close_notify: HTTP framing tells truncation apart
                break
            if len(data) >= FULL_RECORD and limit > len(data):
                data = self._records_behind(data, limit)
            if not waited:
                await trio.lowlevel.cancel_shielded_checkpoint()
            return data
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return b""

    def _recv(self, limit: int) -> bytes:
        if self._deferred_error is not None:
            deferred, self._deferred_error = self._deferred_error, None
            raise deferred
        return self._conn.recv(limit)

    def _records_behind(self, first: bytes, limit: int) -> bytes:
        """`first` and the records that are there to read now, while they are full, up to `limit`.

        The peer's close or a failure that ends it is kept for the next receive.
        """
        pieces, got = [first], len(first)
        while got < limit:
            try:
                piece = self._conn.recv(limit - got)
            except (SSL.WantReadError, SSL.WantWriteError):
                break
            except SSL.Error as exc:
                self._deferred_error = exc  # the peer's close or a failure: the next receive reports it
                break
            pieces.append(piece)
            got += len(piece)
            if len(piece) < FULL_RECORD:
                break
        return b"".join(pieces)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt and send all of `data`; trio.BrokenResourceError when the peer is gone, as trio's streams."""
        await trio.lowlevel.checkpoint_if_cancelled()
        view = memoryview(data).cast("B")
        sent, waited = 0, False
        while sent < len(view):
            try:
                sent += self._conn.send(view[sent:])
            except SSL.WantWriteError:
                await trio.lowlevel.wait_writable(self._sock)
                waited = True
            except SSL.WantReadError:
                await trio.lowlevel.wait_readable(self._sock)
                waited = True
            except SSL.SysCallError as exc:
                if _reset(exc):
                    raise trio.BrokenResourceError(f"the peer reset the connection ({exc.args[1]})") from exc
                raise self._failure(exc) from exc
            except SSL.Error as exc:
                raise self._failure(exc) from exc
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.wait_writable(self._sock)

    async def aclose(self) -> None:
        """Send close_notify (best effort: it keeps the session resumable) and close the socket."""
        try:
            self._conn.shutdown()
        except (SSL.Error, OSError):
            _lib.ERR_clear_error()  # a client that already left (EPIPE): no error to leave on the queue
        finally:
            await self.transport.aclose()

    def peer_der(self) -> bytes | None:
        """The peer's leaf certificate (DER), also on a resumed session."""
        return self.ssl_object.getpeercert(binary_form=True)
