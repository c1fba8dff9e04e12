"""What the fs door's key scan costs per MiB of body, in-process: the markers alone (every session with
refuse_secrets), and with the keys door's fingerprint of kept secrets (a session whose keys door holds some;
the bench's door has none, so its MB/s figures do not include this)."""

from __future__ import annotations

import os
import time

from doors import SecretMatcher, fingerprint_of
from doors.fs import RECEIVE_BATCH, SecretScanner

KEPT_COUNT = 8
KEPT_BYTES = 40  # a 40-hex-character token: three blocks, three needles each


def _text(size: int) -> bytes:
    """Source code (this package's own), repeated to `size` bytes: what a workspace mostly holds."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fs_bench.py"), "rb") as source:
        code = source.read()
    return (code * (size // len(code) + 1))[:size]


def _cpu_ms_per_mb(body: bytes, matcher: SecretMatcher | None) -> float:
    """The median over 3 passes of CPU ms per MiB to scan `body` in the door's batches."""
    samples = []
    for _ in range(3):
        scanner = SecretScanner(b"", matcher)
        start = time.process_time()
        for offset in range(0, len(body), RECEIVE_BATCH):
            scanner.feed(body[offset:offset + RECEIVE_BATCH])
        samples.append((time.process_time() - start) * 1e3 / (len(body) / (1 << 20)))
        if scanner.finding is not None:
            raise RuntimeError("the bench's scan text holds a key marker")
    return sorted(samples)[1]


def scan_figures(size: int) -> dict[str, float]:
    """CPU ms per MiB of the markers' scan, and of the scan with KEPT_COUNT kept secrets."""
    body = _text(size)
    secrets = {f"token{i}": os.urandom(KEPT_BYTES // 2).hex().encode() for i in range(KEPT_COUNT)}
    matcher = SecretMatcher(fingerprint_of(secrets, {name: ["example.test"] for name in secrets}))
    return {
        "fs_scan_cpu_ms_per_mb_markers": round(_cpu_ms_per_mb(body, None), 2),
        f"fs_scan_cpu_ms_per_mb_kept{KEPT_COUNT}": round(_cpu_ms_per_mb(body, matcher), 2),
    }
