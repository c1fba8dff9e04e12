"""How many refusals of one uid the daemon writes down one by one, pure.

The socket is 0666, so any local user can make refusals in a loop, and each whole refusal is a durable,
signed audit event (~400 bytes). Every uid gets a bucket of whole events that refills slowly; a refusal
beyond it is still refused and still counted, and one `launchd.refusals_counted` event per uid and window
says how many there were, by operation and row. The audit stays complete in numbers, and what one local
user can add to the daemon's disk is bounded by time: at most BURST lines at once, then one line per
REFILL_S plus one summary per SUMMARY_S.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

BURST = 32  # whole refusal events a uid may cause at once
REFILL_S = 10.0  # then one more per this many seconds
SUMMARY_S = 60.0  # how long counted refusals wait before their summary is written
MAX_KINDS = 16  # distinct (op, row) pairs named in one summary; the rest are counted as "other"
OTHER = "other"


@dataclass(frozen=True)
class Counted:
    """The refusals of one uid that were counted, not written whole, in one window."""

    uid: int
    count: int
    first: float  # monotonic seconds of the first counted refusal
    last: float
    kinds: tuple[tuple[str, int], ...]  # ("op row", count), most frequent first


@dataclass
class _Bucket:
    tokens: float
    at: float  # when `tokens` was last brought up to date
    counted: Counter[str] = field(default_factory=Counter)
    first: float = 0.0
    last: float = 0.0


class RefusalRate:
    """Per-uid token buckets for whole refusal events, and the windows of those only counted."""

    def __init__(self, burst: int = BURST, refill_s: float = REFILL_S, summary_s: float = SUMMARY_S) -> None:
        self.burst = burst
        self.refill_s = refill_s
        self.summary_s = summary_s
        self._buckets: dict[int, _Bucket] = {}

    def admit(self, uid: int, op: str, row: str | None, now: float) -> bool:
        """True: write this refusal whole. False: it was counted for the uid's next summary."""
        bucket = self._buckets.get(uid)
        if bucket is None:
            bucket = self._buckets[uid] = _Bucket(tokens=float(self.burst), at=now)
        bucket.tokens = min(float(self.burst), bucket.tokens + max(0.0, now - bucket.at) / self.refill_s)
        bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return True
        kind = f"{op} {row}" if row else op
        if kind not in bucket.counted and len(bucket.counted) >= MAX_KINDS:
            kind = OTHER
        if not bucket.counted:
            bucket.first = now
        bucket.counted[kind] += 1
        bucket.last = now
        return False

    def next_due(self) -> float | None:
        """When the earliest waiting summary is due (monotonic seconds), or None when nothing was counted."""
        firsts = [bucket.first for bucket in self._buckets.values() if bucket.counted]
        return min(firsts) + self.summary_s if firsts else None

    def due(self, now: float, *, every: bool = False) -> list[Counted]:
        """The summaries whose window ended by `now` (all of them with `every`, at the daemon's stop); each is
        given once. Buckets that are full again and count nothing are forgotten."""
        ready: list[Counted] = []
        for uid, bucket in list(self._buckets.items()):
            if bucket.counted and (every or now >= bucket.first + self.summary_s):
                ready.append(Counted(uid, sum(bucket.counted.values()), bucket.first, bucket.last,
                                     tuple(bucket.counted.most_common())))
                bucket.counted = Counter()
            refilled = bucket.tokens + max(0.0, now - bucket.at) / self.refill_s
            if not bucket.counted and refilled >= self.burst:
                del self._buckets[uid]
        return ready
