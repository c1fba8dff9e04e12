"""The kept-secret fingerprint's scan rate (doors/_secret_match.py) beside plain regular-expression scans.

Each scan is fed 64 KiB chunks through its streaming form, as the fs door feeds a body: MiB/s of random bytes
and of ASCII text, for a session keeping one secret (an Anthropic-shaped key, 7 blocks) and five (28 blocks).
Beside it, in the same run: the fs door's private-key marker scan (doors/fs/_secrets.py) and the audit guard's
secret-shape regex (one alternation). Also the prefilter's false candidates per MiB of random bytes (each
costs one keyed digest; none may be confirmed).

    python -m bench.fingerprint_bench [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Callable
from typing import Any

from doors import SecretMatcher, fingerprint_of
from doors.fs import SecretScanner

MIB = 1024 * 1024
CHUNK = 64 * 1024
QUICK_MIB, FULL_MIB = 4, 32  # bytes scanned per workload (the false-candidate count scans half of it)
RATIOS = (("fingerprint_scan_mib_s_1_secret_random", "regex_scan_mib_s_shapes_random"),)
_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
# The audit guard's kind of scan: an alternation of token shapes (launcher/policy/audit_guard.py, abridged to
# the shapes that start with a literal, as a door would write them for bytes).
_SHAPES = re.compile(rb"(?<![A-Za-z0-9])(?:sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{36,}|"
                     rb"xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|(?:AKIA|ASIA)[0-9A-Z]{16})")


def _secrets(count: int, rng: random.Random) -> dict[str, bytes]:
    return {f"s{index}": b"sk-ant-api03-" + bytes(rng.choice(_ALPHABET) for _ in range(95)) for index in range(count)}


def _workloads(size: int, rng: random.Random) -> dict[str, bytes]:
    words = b"the quick brown fox jumps over the lazy dog while 0123456789 counts; "
    return {"random": rng.randbytes(size), "text": (words * (size // len(words) + 1))[:size]}


def _rate(scan: Callable[[bytes], object], data: bytes, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for offset in range(0, len(data), CHUNK):
            scan(data[offset : offset + CHUNK])
        best = min(best, time.perf_counter() - start)
    return round(len(data) / MIB / best, 1)


def _regex_feed(pattern: re.Pattern[bytes]) -> Callable[[bytes], object]:
    return lambda chunk: pattern.search(chunk)


def run(quick: bool) -> dict[str, Any]:
    """Scan rates in MiB/s (best of the rounds) and the prefilter's false candidates per MiB."""
    rng = random.Random(11)
    mib, rounds = (QUICK_MIB, 3) if quick else (FULL_MIB, 5)
    size = mib * MIB
    figures: dict[str, Any] = {}
    for name, data in _workloads(size, rng).items():
        for count in (1, 5):
            matcher = SecretMatcher(fingerprint_of(_secrets(count, rng), {}))
            stream = matcher.stream()
            label = "1_secret" if count == 1 else f"{count}_secrets"
            figures[f"fingerprint_scan_mib_s_{label}_{name}"] = _rate(stream.feed, data, rounds)
        figures[f"regex_scan_mib_s_shapes_{name}"] = _rate(_regex_feed(_SHAPES), data, rounds)
        figures[f"regex_scan_mib_s_fs_markers_{name}"] = _rate(SecretScanner().feed, data, rounds)
    figures["fingerprint_false_candidates_per_mib_5_secrets"] = _false_candidates(rng, max(1, mib // 2))
    return figures


def _false_candidates(rng: random.Random, mib: int) -> float:
    """Prefilter hits per MiB of random bytes, five secrets (28 blocks); each one is a digest, none confirms."""
    matcher = SecretMatcher(fingerprint_of(_secrets(5, rng), {}))
    data = rng.randbytes(mib * MIB)
    confirmed = list(matcher.find(data))
    assert not confirmed, "a random stream matched a kept secret"
    return round(matcher.candidates(data) / mib, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(parser.parse_args().quick), indent=2))


if __name__ == "__main__":
    main()
