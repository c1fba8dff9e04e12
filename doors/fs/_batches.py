"""A request body gathered into batches: each arriving piece is copied into one reused buffer, and a full buffer
is scanned for keys and handed to the sink at once (one scan call and one write per batch, not per TLS record;
docs/decisions/fs.md, "Bulk bytes")."""

from __future__ import annotations

from collections.abc import Callable

from doors.fs._secrets import KEPT_CARRY, SecretScanner

RECEIVE_BATCH = 256 * 1024  # what one scan and one write take: a buffer that stays in the CPU's cache

Sink = Callable[[bytes | bytearray], None]  # must copy what it keeps: the batch's buffer is reused


class BatchKeeper:
    """Pieces of a body, scanned and handed to `sink` `size` bytes at a time; after a finding nothing more is kept.

    One buffer per body, allocated once: a fresh allocation per batch costs a page fault per 4 KiB (measured in
    the door: 12 ms per 16 MiB), more than the copy into a buffer already mapped."""

    def __init__(self, scanner: SecretScanner | None, sink: Sink, size: int = RECEIVE_BATCH) -> None:
        self._scanner = scanner
        self._sink = sink
        self._buffer = bytearray(max(1, size))
        self._view = memoryview(self._buffer)
        self._held = 0
        self.tail = b""  # the last KEPT_CARRY bytes kept

    @property
    def found(self) -> bool:
        return self._scanner is not None and self._scanner.finding is not None

    def add(self, piece: bytes) -> bool:
        """Take the next piece, keeping every batch it fills; True once a key was found (stop reading)."""
        size, offset, source = len(self._buffer), 0, memoryview(piece)
        while offset < len(piece) and not self.found:
            part = min(size - self._held, len(piece) - offset)
            self._view[self._held:self._held + part] = source[offset:offset + part]
            self._held += part
            offset += part
            if self._held == size:
                self._keep(self._buffer)
        return self.found

    def finish(self) -> bool:
        """Keep what is left; True when a key was found."""
        if self._held and not self.found:
            self._keep(bytes(self._view[:self._held]))
        return self.found

    def _keep(self, batch: bytes | bytearray) -> None:
        self._held = 0
        if self._scanner is not None and self._scanner.feed(batch) is not None:
            return
        self._sink(batch)
        self.tail = (self.tail + batch[-KEPT_CARRY:])[-KEPT_CARRY:]
