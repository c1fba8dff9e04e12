"""A blocking pyOpenSSL connection with the surface of ssl.SSLSocket that the app's DoorClient uses.

TLS runs over memory BIOs and the socket's own blocking calls, so the socket's timeout and errors
(TimeoutError, ConnectionResetError) reach the caller as they do with the stdlib's SSLSocket.
"""

from __future__ import annotations

import contextlib
import socket
import ssl

from OpenSSL import SSL

from doors._transport._pyossl import BIO_CHUNK, memory_connection

SEND_PIECE = 256 * 1024


class BlockingTls:
    """TLS on a connected blocking socket, driven by a pyOpenSSL memory-BIO connection."""

    def __init__(self, sock: socket.socket, ctx: SSL.Context, session: object | None = None) -> None:
        self._sock = sock
        self._tls, self._incoming, self._outgoing = memory_connection(ctx, server_side=False, session=session)

    @classmethod
    def connect(cls, sock: socket.socket, ctx: SSL.Context, session: object | None = None) -> BlockingTls:
        """Handshake as a client on `sock`; ssl.SSLError (stdlib-shaped) or OSError when it fails."""
        tls = cls(sock, ctx, session)
        tls.do_handshake()
        return tls

    def _flush(self) -> None:
        pending = self._outgoing.read()
        if pending:
            self._sock.sendall(pending)

    def _fill(self) -> None:
        data = self._sock.recv(BIO_CHUNK)
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    def do_handshake(self) -> None:
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                self._fill()
                continue
            except ssl.SSLError:
                with contextlib.suppress(OSError):
                    self._flush()  # the alert OpenSSL queued for the door
                raise
            self._flush()
            return

    def sendall(self, data: bytes) -> None:
        """Encrypt and send SEND_PIECE bytes at a time: the door reads the first piece while the next is being
        encrypted, and the client never holds more than a piece of ciphertext (not a whole 16 MiB body's)."""
        view = memoryview(data).cast("B")
        for start in range(0, len(view), SEND_PIECE):
            self._tls.write(view[start:start + SEND_PIECE])
            self._flush()
        if not view:
            self._flush()

    def recv(self, max_bytes: int) -> bytes:
        """Decrypted bytes, b"" once the door closed (with or without close_notify, as the stdlib does)."""
        while True:
            try:
                return self._tls.read(max_bytes)
            except ssl.SSLWantReadError:
                self._flush()
                self._fill()
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""

    def pending(self) -> int:
        return self._tls.pending()

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
            with contextlib.suppress(ssl.SSLError, OSError):
                self._tls.unwrap()
                self._sock.settimeout(0)
                self._flush()
        finally:
            self._sock.close()
