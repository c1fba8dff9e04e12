"""Streaming private-key detector. Pure: bytes in, a finding out.

Markers, not full parses: PEM/PGP armour (`-----BEGIN … PRIVATE KEY`), the SSH.com form
(`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY`), PuTTY (`PuTTY-User-Key-File-`), and the base64 of an OpenSSH key
body pasted without armour (`openssh-key-v1`). The scanner keeps the last CARRY bytes between chunks, so a
marker split across chunks — or across two appends, when seeded with the file's tail — is still found.
Given the keys door's fingerprint (`kept`), it also finds a run of a kept secret (doors/_secret_match.py) the
same way: a whole one, or any 31 bytes of one, across chunks and, seeded, across writes.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from doors._ffi import ffi as _ffi  # out-of-line: no C parser at import (doors/_ffi_cdefs.py)
from doors._secret_match import CARRY as KEPT_CARRY
from doors._secret_match import FIND_WINDOW, KeptSecret, SecretMatcher

# (kind, a literal every match contains, the pattern). The literal is searched first (bytes.find runs at
# memory speed); the regular expression runs only on windows that hold it.
_MARKERS: tuple[tuple[str, bytes, re.Pattern[bytes]], ...] = (
    ("PEM private key", b"PRIVATE KEY", re.compile(rb"-{4,5} ?BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY")),
    ("PuTTY private key", b"PuTTY-User-Key-File-", re.compile(rb"PuTTY-User-Key-File-[0-9]")),
    ("OpenSSH private key", b"b3BlbnNzaC1rZXktdjE", re.compile(rb"b3BlbnNzaC1rZXktdjE")),  # "openssh-key-v1"
)
# Longest possible marker minus one: enough history that a match ending in new data is always whole.
CARRY = 5 + 1 + 6 + 40 + len("PRIVATE KEY") - 1


@dataclass(frozen=True)
class Finding:
    """What was found and where it ends in the scanned stream (offset counted from the first fed byte)."""

    kind: str
    end: int


# From MEMMEM_FROM bytes on, glibc's memmem searches the whole chunk at once: 0.14-0.19 ms per MiB for the three
# literals against 0.24-1.4 for bytes.find in FIND_WINDOW windows (docs/decisions/fs-mount.md); below it, the
# foreign call costs more than the search it saves.
_libc: Any = _ffi.dlopen(None)
MEMMEM_FROM = 64 * 1024


def _holds(literal: bytes, carry: bytes, chunk: bytes | bytearray) -> bool:
    """Whether carry + chunk holds `literal`, without copying the chunk (a literal is shorter than CARRY)."""
    if literal in carry + chunk[:CARRY]:
        return True
    if len(chunk) >= MEMMEM_FROM:
        return bool(_libc.memmem(_ffi.from_buffer(chunk), len(chunk), literal, len(literal)) != _ffi.NULL)
    if len(chunk) <= FIND_WINDOW:
        return literal in chunk
    reach = len(literal) - 1  # windows overlap by this much: a literal starting in one ends in the next
    return any(chunk.find(literal, start, start + FIND_WINDOW + reach) >= 0
               for start in range(0, len(chunk), FIND_WINDOW))


def _first_match(carry: bytes, chunk: bytes | bytearray) -> tuple[str, int] | None:
    """The marker that ends first in carry + chunk, reaching into the chunk: its kind and end in carry + chunk."""
    best: tuple[str, int] | None = None
    window = b""
    for kind, literal, pattern in _MARKERS:
        if not _holds(literal, carry, chunk):
            continue
        window = window or carry + chunk
        min_end = len(carry)
        for match in pattern.finditer(window):
            if match.end() > min_end and (best is None or match.end() < best[1]):
                best = (kind, match.end())
                break
    return best


def kept_kind(secret: KeptSecret) -> str:
    """What a finding of a kept secret says it found (the row that keeps it, never a byte of it)."""
    return f"run of the secret kept as {secret.row}"


class SecretScanner:
    """Feed chunks in order; the first finding sticks. `history` seeds it with bytes already stored; `kept`,
    the keys door's fingerprint, adds its secrets to what is found."""

    def __init__(self, history: bytes = b"", kept: SecretMatcher | None = None) -> None:
        self._carry = history[-CARRY:]
        self._fed = 0
        self._kept = kept.stream(history) if kept is not None else None
        self.finding: Finding | None = None

    def feed(self, chunk: bytes | bytearray) -> Finding | None:
        """Scan `chunk`; return the finding once one is seen (only matches reaching into new bytes count)."""
        if self.finding is not None or not chunk:
            return self.finding
        hit = _first_match(self._carry, chunk)
        if hit is not None:
            kind, end = hit
            self.finding = Finding(kind, self._fed + end - len(self._carry))
        elif self._kept is not None and (found := self._kept.feed(chunk)) is not None:
            self.finding = Finding(kept_kind(found.secret), found.end)
        self._fed += len(chunk)
        self._carry = (self._carry + chunk[-CARRY:])[-CARRY:]
        return self.finding


def scan(content: bytes, history: bytes = b"", kept: SecretMatcher | None = None) -> Finding | None:
    """Scan whole content at once (tests and small bodies)."""
    return SecretScanner(history, kept).feed(content)


class RecentWrites:
    """The last bytes the door wrote, to any file, in the order writes were committed. Seeding a body's scan with
    it finds a kept secret split across two files written one right after the other (not one written between
    other writes, nor the second half written first: docs/decisions/keys.md)."""

    def __init__(self) -> None:
        self._tail = b""
        self._lock = threading.Lock()  # commits run in worker threads

    @property
    def tail(self) -> bytes:
        return self._tail

    def add(self, written: bytes) -> None:
        """Append the last bytes of a body just written."""
        with self._lock:
            self._tail = (self._tail + written)[-KEPT_CARRY:]
