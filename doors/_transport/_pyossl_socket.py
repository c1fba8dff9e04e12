"""A blocking pyOpenSSL connection with the surface of ssl.SSLSocket that the app's DoorClient uses.

TLS runs over memory BIOs and the socket's own blocking calls, so the socket's timeout and errors
(TimeoutError, ConnectionResetError) reach the caller as they do with the stdlib's SSLSocket.
"""

from __future__ import annotations

import contextlib
import socket
import ssl

from OpenSSL import SSL
from OpenSSL._util import ffi as _ffi
from OpenSSL._util import lib as _lib

from doors._transport._pyossl import BIO_CHUNK, as_stdlib_error, memory_connection

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
        self._plain = bytearray(0)  # recv's plaintext, for callers that want bytes

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
        if len(self._plain) < max_bytes:
            self._plain = bytearray(max_bytes)
        received = self.recv_into(self._plain, max_bytes)
        return bytes(memoryview(self._plain)[:received])

    def recv_into(self, buffer: bytearray | memoryview, nbytes: int = 0) -> int:
        """Decrypt into `buffer` (at most `nbytes` when given): the first record that comes, and the records
        already received behind it; 0 once the door closed. OpenSSL writes the plaintext into `buffer` itself
        (pyOpenSSL's recv makes a fresh buffer and a bytes copy per record: docs/decisions/bench.md, "shpipe")."""
        view = memoryview(buffer).cast("B")
        limit = min(nbytes, len(view)) if nbytes else len(view)
        if self._deferred is not None:
            deferred, self._deferred = self._deferred, None
            return self._raised(deferred)
        with _ffi.from_buffer(view, require_writable=True) as out:
            got = 0
            while got < limit:
                result = _lib.SSL_read(self._conn._ssl, out + got, limit - got)
                if result > 0:
                    got += result
                    continue
                if _lib.SSL_get_error(self._conn._ssl, result) == _lib.SSL_ERROR_WANT_READ:
                    if got:
                        break  # what was already received: the caller takes it before the next wait
                    self._flush()
                    self._fill()
                    continue
                try:
                    self._conn._raise_ssl_error(self._conn._ssl, result)  # pyOpenSSL's own error for it
                except SSL.Error as exc:
                    if not got:
                        return self._raised(exc)
                    self._deferred = exc  # the door's close or a failure: the next recv reports it
                break
        return got

    def _raised(self, exc: SSL.Error) -> int:
        """0 for the door's close (close_notify, or none: as the stdlib does); else its ssl error."""
        if isinstance(exc, SSL.ZeroReturnError):
            return 0
        error = as_stdlib_error(self._conn, exc)
        if isinstance(error, ssl.SSLEOFError):
            return 0
        raise error from exc

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
