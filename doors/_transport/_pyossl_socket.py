"""A blocking pyOpenSSL connection with the surface of ssl.SSLSocket that the app's DoorClient uses.

TLS runs over memory BIOs and the socket's own blocking calls, so the socket's timeout and errors
(TimeoutError, ConnectionResetError) reach the caller as they do with the stdlib's SSLSocket.
"""

from __future__ import annotations

import contextlib
import socket
import ssl

from OpenSSL import SSL

from doors._transport._pyossl import BIO_CHUNK, as_stdlib_error, memory_connection
from doors._transport._stream import FULL_RECORD

SEND_PIECE = 256 * 1024  # plaintext encrypted and sent at a time
RECEIVE_PIECE = 256 * 1024  # ciphertext read from the socket at a time


class BlockingTls:
    """TLS on a connected blocking socket, driven by a pyOpenSSL memory-BIO connection.

    It calls pyOpenSSL directly (its "want read" is an exception only here, not translated on every read)
    and turns only real failures into the stdlib's errors.
    """

    def __init__(self, sock: socket.socket, ctx: SSL.Context, session: object | None = None) -> None:
        self._sock = sock
        self._tls, _, _ = memory_connection(ctx, server_side=False, session=session)
        self._conn = self._tls.conn
        self._buffer = bytearray(RECEIVE_PIECE)
        self._view = memoryview(self._buffer)
        self._deferred: SSL.Error | None = None

    @classmethod
    def connect(cls, sock: socket.socket, ctx: SSL.Context, session: object | None = None, *,
                hold_last_flight: bool = False) -> BlockingTls:
        """Handshake as a client on `sock`; ssl.SSLError (stdlib-shaped) or OSError when it fails.

        With `hold_last_flight` the client's Finished goes out with its first send (or at the first
        receive or close): for a caller that sends at once.
        """
        tls = cls(sock, ctx, session)
        tls.do_handshake(hold_last_flight=hold_last_flight)
        return tls

    def _flush(self) -> None:
        pieces = []
        while True:
            try:
                piece = self._conn.bio_read(BIO_CHUNK)
            except SSL.WantReadError:
                break  # nothing (more) to send
            pieces.append(piece)
            if len(piece) < BIO_CHUNK:
                break  # a memory BIO hands out all it holds, up to the size asked
        if pieces:
            self._sock.sendall(b"".join(pieces))

    def _fill(self) -> None:
        received = self._sock.recv_into(self._buffer)  # one buffer for the connection: no fresh one per read
        if received:
            self._conn.bio_write(self._view[:received])
        else:
            self._conn.bio_shutdown()

    def do_handshake(self, *, hold_last_flight: bool = False) -> None:
        while True:
            try:
                self._conn.do_handshake()
            except SSL.WantReadError:
                self._flush()
                self._fill()
                continue
            except SSL.Error as exc:
                with contextlib.suppress(OSError):
                    self._flush()  # the alert OpenSSL queued for the door
                raise as_stdlib_error(self._conn, exc) from exc
            if not hold_last_flight:
                self._flush()
            return

    def sendall(self, data: bytes) -> None:
        """Encrypt and send `data` a piece at a time: the door reads the first records while the client
        encrypts the next, and the client holds one piece of ciphertext, not the whole body."""
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            piece_end = min(len(view), sent + SEND_PIECE)
            while sent < piece_end:  # pyOpenSSL enables partial writes: one record per call
                try:
                    sent += self._conn.send(view[sent:piece_end])
                except SSL.Error as exc:
                    raise as_stdlib_error(self._conn, exc) from exc
            self._flush()

    def recv(self, max_bytes: int) -> bytes:
        """Decrypted bytes, b"" once the door closed (with or without close_notify, as the stdlib does)."""
        while True:
            try:
                data = self._recv(max_bytes)
                return self._records_behind(data, max_bytes) if len(data) >= FULL_RECORD else data
            except SSL.WantReadError:
                self._flush()
                self._fill()
            except SSL.ZeroReturnError:
                return b""
            except SSL.Error as exc:
                error = as_stdlib_error(self._conn, exc)
                if isinstance(error, ssl.SSLEOFError):
                    return b""
                raise error from exc

    def _recv(self, max_bytes: int) -> bytes:
        if self._deferred is not None:
            deferred, self._deferred = self._deferred, None
            raise deferred
        return self._conn.recv(max_bytes)

    def _records_behind(self, first: bytes, limit: int) -> bytes:
        """`first` and the full records already received, up to `limit` (a bulk body in fewer steps)."""
        pieces, got = [first], len(first)
        while got < limit:
            try:
                piece = self._conn.recv(limit - got)
            except SSL.WantReadError:
                break
            except SSL.Error as exc:
                self._deferred = exc  # the door's close or a failure: the next recv reports it
                break
            pieces.append(piece)
            got += len(piece)
            if len(piece) < FULL_RECORD:
                break
        return b"".join(pieces)

    def pending(self) -> int:
        return self._conn.pending()

    def fileno(self) -> int:
        return self._sock.fileno()

    def settimeout(self, timeout_s: float | None) -> None:
        self._sock.settimeout(timeout_s)

    @property
    def session(self) -> SSL.Session | None:
        return self._tls.session

    @property
    def session_reused(self) -> bool:
        return self._tls.session_reused

    def getpeercert(self, binary_form: bool = False) -> bytes | None:
        return self._tls.getpeercert(binary_form)

    def close(self) -> None:
        """Send close_notify (best effort: it keeps the session resumable) and close the socket."""
        try:
            with contextlib.suppress(SSL.Error, OSError):
                self._conn.shutdown()
                self._sock.settimeout(0)
                self._flush()
        finally:
            self._sock.close()
