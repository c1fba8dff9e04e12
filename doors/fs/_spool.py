"""A request body held until the door decides: in memory up to a bound, then in an unnamed file."""

from __future__ import annotations

import os
from collections.abc import Iterator

from doors.fs._secrets import CARRY

SPOOL_MEMORY = 1024 * 1024
SPOOL_PIECE = 1024 * 1024


class Spool:
    """Collect a body; past SPOOL_MEMORY bytes it moves to an O_TMPFILE beside the target (no name)."""

    def __init__(self, dir_fd: int, memory_limit: int = SPOOL_MEMORY) -> None:
        self._dir_fd = dir_fd
        self._limit = memory_limit
        self._memory = bytearray()
        self._fd = -1
        self.size = 0
        self.head = b""  # the first CARRY bytes: a key marker may start in the file's tail

    def add(self, chunk: bytes) -> None:
        """Append a piece of the body."""
        if len(self.head) < CARRY:
            self.head = (self.head + chunk)[:CARRY]
        self.size += len(chunk)
        if self._fd < 0 and len(self._memory) + len(chunk) <= self._limit:
            self._memory += chunk
            return
        if self._fd < 0:
            self._fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600, dir_fd=self._dir_fd)
            _write_all(self._fd, self._memory)
            self._memory = bytearray()
        _write_all(self._fd, chunk)

    def pieces(self) -> Iterator[bytes | bytearray]:
        """The body in order: one piece when it fit in memory, SPOOL_PIECE pieces otherwise."""
        if self._fd < 0:
            yield self._memory
            return
        offset = 0
        while offset < self.size:
            piece = os.pread(self._fd, min(SPOOL_PIECE, self.size - offset), offset)
            if not piece:
                return
            offset += len(piece)
            yield piece

    def close(self) -> None:
        """Drop the body (the unnamed file vanishes with its fd)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._memory = bytearray()


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
