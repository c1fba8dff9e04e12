"""Streaming private-key detector. Pure: bytes in, a finding out.

Markers, not full parses: PEM/PGP armour (`-----BEGIN … PRIVATE KEY`), the SSH.com form
(`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY`), PuTTY (`PuTTY-User-Key-File-`), and the base64 of an OpenSSH key
body pasted without armour (`openssh-key-v1`). The scanner keeps the last CARRY bytes between chunks, so a
marker split across chunks — or across two appends, when seeded with the file's tail — is still found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (kind, a literal every match contains, the pattern). The literal is searched first (bytes.find runs at
# memory speed); the regular expression runs only on windows that hold it.
_MARKERS: tuple[tuple[str, bytes, re.Pattern[bytes]], ...] = (
    ("PEM private key", b"BEGIN ", re.compile(rb"-{4,5} ?BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY")),
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


def _first_match(window: bytes, min_end: int) -> tuple[str, int] | None:
    best: tuple[str, int] | None = None
    for kind, literal, pattern in _MARKERS:
        if literal not in window:
            continue
        for match in pattern.finditer(window):
            if match.end() > min_end and (best is None or match.end() < best[1]):
                best = (kind, match.end())
                break
    return best


class SecretScanner:
    """Feed chunks in order; the first finding sticks. `history` seeds it with bytes already stored."""

    def __init__(self, history: bytes = b"") -> None:
        self._carry = history[-CARRY:]
        self._fed = 0
        self.finding: Finding | None = None

    def feed(self, chunk: bytes) -> Finding | None:
        """Scan `chunk`; return the finding once one is seen (only matches reaching into new bytes count)."""
        if self.finding is not None or not chunk:
            return self.finding
        window = self._carry + chunk
        hit = _first_match(window, len(self._carry))
        if hit is not None:
            kind, end = hit
            self.finding = Finding(kind, self._fed + end - len(self._carry))
        self._fed += len(chunk)
        self._carry = window[-CARRY:]
        return self.finding


def scan(content: bytes, history: bytes = b"") -> Finding | None:
    """Scan whole content at once (tests and small bodies)."""
    return SecretScanner(history).feed(content)
