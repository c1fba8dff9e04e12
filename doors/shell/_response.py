"""An HTTP/1.1 response read incrementally, for the `sh` client: bytes in, the head and body pieces out. Pure.

The door frames its answers with h11: a status line and headers, then a chunked body (a stream of frames) or
one with a Content-Length (a refusal). h11 itself costs ~15 ms of imports (dataclasses, typing), paid on every
`sharness-launch sh`, so the client reads this small subset instead: no 1xx, no trailers kept, no pipelining.
Anything else is a ResponseError.
"""

from __future__ import annotations

MAX_HEAD_BYTES = 64 * 1024
MAX_CHUNK_LINE = 1024


class ResponseError(ValueError):
    """The bytes are not an HTTP/1.1 response this reader takes."""


class ResponseReader:
    """Feed bytes as they arrive; `status` and `headers` once the head is read; `feed` returns body pieces."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.done = False
        self._buffer = bytearray()
        self._chunked = False
        self._left: int | None = None  # bytes left of the body (Content-Length) or of the current chunk
        self._state = "head"  # head, size, data, data-end, trailer, length, close, done

    def feed(self, data: bytes) -> list[bytes]:
        """Body pieces `data` completes (b"" at the end of the stream); ResponseError when it cannot be read."""
        if not data:
            return self._eof()
        self._buffer += data
        pieces: list[bytes] = []
        while self._buffer and self._state != "done":
            before = len(self._buffer), self._state
            piece = self._step()
            if piece:
                pieces.append(piece)
            if (len(self._buffer), self._state) == before:
                break  # the step needs more bytes
        return pieces

    def _eof(self) -> list[bytes]:
        if self._state == "close":
            self._finish()
            return []
        if self._state != "done":
            raise ResponseError(f"the stream ended in the response's {self._state}")
        return []

    def _step(self) -> bytes:
        if self._state == "head":
            self._head()
        elif self._state in ("size", "data-end", "trailer"):
            self._chunk_line()
        elif self._state in ("data", "length"):
            return self._take()
        elif self._state == "close":
            piece = bytes(self._buffer)
            self._buffer.clear()
            return piece
        return b""

    def _line(self, limit: int) -> bytes | None:
        end = self._buffer.find(b"\r\n")
        if end < 0:
            if len(self._buffer) > limit:
                raise ResponseError(f"a line longer than {limit} bytes")
            return None
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 2]
        return line

    def _head(self) -> None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise ResponseError(f"a response head longer than {MAX_HEAD_BYTES} bytes")
            return
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[:end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if version != "HTTP/1.1" or not code.isdigit() or int(code) < 200:
            raise ResponseError(f"not an HTTP/1.1 final response: {lines[0][:80]!r}")
        self.status = int(code)
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise ResponseError(f"a header line without a colon: {line[:80]!r}")
            self.headers[name.strip().lower()] = value.strip()
        self._body_kind()

    def _body_kind(self) -> None:
        encoding = self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        if encoding == "chunked":
            self._chunked, self._state = True, "size"
        elif encoding:
            raise ResponseError(f"transfer-encoding {encoding!r}")
        elif length is not None:
            if not length.isdigit():
                raise ResponseError(f"content-length {length[:40]!r}")
            self._left, self._state = int(length), "length"
            if self._left == 0:
                self._finish()
        else:
            self._state = "close"

    def _chunk_line(self) -> None:
        line = self._line(MAX_CHUNK_LINE)
        if line is None:
            return
        if self._state == "data-end":
            if line:
                raise ResponseError("a chunk longer than its size")
            self._state = "size"
        elif self._state == "trailer":
            if not line:
                self._finish()
        else:
            size = line.split(b";", 1)[0].strip()
            try:
                self._left = int(size, 16)
            except ValueError:
                raise ResponseError(f"a chunk size {size[:40]!r}") from None
            self._state = "data" if self._left else "trailer"

    def _take(self) -> bytes:
        assert self._left is not None
        piece = bytes(self._buffer[:self._left])
        del self._buffer[:len(piece)]
        self._left -= len(piece)
        if self._left == 0:
            if self._state == "data":
                self._state = "data-end"
            else:
                self._finish()
        return piece

    def _finish(self) -> None:
        self._state, self.done = "done", True
