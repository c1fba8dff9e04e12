"""A fingerprint of the secrets the keys door keeps: lets another process find a run of one in a byte stream
without holding the secret. Pure: bytes in, matches out (docs/decisions/keys.md, "Fingerprint").

The keys door cuts each secret into non-overlapping WINDOW-byte blocks (offsets 0, 16, 32, ..., and one more
ending at the secret's end), and hands out, per block, a keyed digest (BLAKE2b, 64 bits, a per-session key)
and a 1-bit-per-byte keyed projection of it (the prefilter). A scanner projects the stream with the same table
(`bytes.translate`), packs 8 projected bits per position with one big-integer multiplication, finds each
block's packed projection with `bytes.find`, and confirms a candidate with the digest. Any run of at least
2 * WINDOW - 1 bytes of a secret, and any whole secret of at least WINDOW bytes, holds a whole block; a secret
of MIN_SECRET..WINDOW-1 bytes is one block of its own length; a shorter one is not fingerprinted (`unmatched`).
"""

from __future__ import annotations

import base64
import hashlib
import secrets as random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FORMAT = "sharness-secret-match/v1"
WINDOW = 16  # block length: 2 * WINDOW - 1 = 31 bytes of a secret are always found
MIN_SECRET = 8  # shorter values would match ordinary words (the audit guard's MIN_KEPT_CHARS)
DIGEST_BYTES = 8  # a projection candidate is a false match with probability 2**-64
KEY_BYTES = 32
CARRY = WINDOW - 1  # bytes kept between chunks: a block ending in a new chunk is whole in carry + chunk
_PACK = sum(1 << (7 * j + 7) for j in range(8))  # x * _PACK puts the 8 bits starting at each byte in that byte
# A needle is looked for FIND_WINDOW bytes at a time: CPython's bytes.find runs its simple search on a text under
# 30,000 bytes and a slower one above (1.2-2.5x more CPU per MiB: docs/decisions/fs.md, "Bulk bytes").
FIND_WINDOW = 16 * 1024


def _digest(key: bytes, block: bytes) -> bytes:
    return hashlib.blake2b(block, key=key, digest_size=DIGEST_BYTES, person=b"sharness-block").digest()


def projection_table(key: bytes) -> bytes:
    """256 bytes of 0 or 1: which half of the byte values each byte falls in, chosen by `key` (128 each)."""
    ranked = sorted(range(256), key=lambda value: hashlib.blake2b(bytes([value]), key=key, person=b"sharness-proj")
                    .digest())
    table = bytearray(256)
    for value in ranked[:128]:
        table[value] = 1
    return bytes(table)


def packed_windows(projected: bytes) -> bytes:
    """Byte r = the 8 projected bits at r..r+7, first bit highest (len - 7 bytes; none under 8)."""
    if len(projected) < 8:
        return b""
    packed = (int.from_bytes(projected, "big") * _PACK).to_bytes(len(projected) + 7, "big")
    return packed[7 : len(projected)]


def block_offsets(length: int) -> tuple[int, ...]:
    """Where the blocks of a secret of `length` bytes start: every WINDOW bytes, plus one ending at its end."""
    if length < WINDOW:
        return (0,) if length >= MIN_SECRET else ()
    offsets = list(range(0, length - WINDOW + 1, WINDOW))
    if offsets[-1] + WINDOW < length:
        offsets.append(length - WINDOW)
    return tuple(offsets)


@dataclass(frozen=True)
class Block:
    """One block of a secret: where it lies in the secret, its projection bits and its keyed digest."""

    offset: int
    length: int
    bits: int  # the block's projection, first byte highest
    digest: bytes


@dataclass(frozen=True)
class KeptSecret:
    """What the fingerprint says of one secret: its name, the row that keeps it, its hosts, length, blocks."""

    name: str
    hosts: frozenset[str]
    length: int
    blocks: tuple[Block, ...]

    @property
    def row(self) -> str:
        return f"doors.keys.secrets.{self.name}"


@dataclass(frozen=True)
class Match:
    """A block of `secret` found at offsets [start, end) of the scanned bytes; it lies at `secret_offset` in
    the secret, so the whole secret would begin at start - secret_offset."""

    secret: KeptSecret
    start: int
    end: int
    secret_offset: int


@dataclass(frozen=True)
class SecretFingerprint:
    """The session's key (projection table and digests) and what it says of each kept secret."""

    key: bytes
    secrets: tuple[KeptSecret, ...]
    unmatched: tuple[str, ...] = ()  # kept secrets too short to fingerprint
    table: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", projection_table(self.key))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(secret.name for secret in self.secrets)

    def to_json(self) -> dict[str, Any]:
        """The wire form: per block 2 bytes of projection and 8 of digest, base64 (offsets follow from the
        length), so one secret of 64 KiB fits one status message."""
        return {"format": FORMAT, "window": WINDOW, "key": base64.b64encode(self.key).decode(),
                "unmatched": list(self.unmatched), "secrets": [_secret_json(secret) for secret in self.secrets]}

    def parts(self) -> list[dict[str, Any]]:
        """The wire form cut in one part per secret (and one naming the unmatched), for messages of bounded size."""
        one = [SecretFingerprint(self.key, (secret,)).to_json() for secret in self.secrets]
        return [*one, SecretFingerprint(self.key, (), self.unmatched).to_json()]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SecretFingerprint:
        """The fingerprint from its wire form; ValueError when it is not one this code reads."""
        return cls.from_parts([raw])

    @classmethod
    def from_parts(cls, parts: Iterable[Mapping[str, Any]]) -> SecretFingerprint:
        """One fingerprint from its parts, which must share the key; ValueError otherwise."""
        keys: set[bytes] = set()
        kept: list[KeptSecret] = []
        unmatched: list[str] = []
        for raw in parts:
            if raw.get("format") != FORMAT or raw.get("window") != WINDOW:
                raise ValueError(f"not a {FORMAT} fingerprint with window {WINDOW}")
            keys.add(base64.b64decode(str(raw["key"]), validate=True))
            kept.extend(_secret_of(item) for item in raw["secrets"])
            unmatched.extend(str(name) for name in raw.get("unmatched", ()))
        if len(keys) != 1 or len(next(iter(keys))) != KEY_BYTES:
            raise ValueError(f"the fingerprint's parts must share one key of {KEY_BYTES} bytes")
        return cls(keys.pop(), tuple(sorted(kept, key=lambda secret: secret.name)), tuple(sorted(unmatched)))


_BLOCK_WIRE = 2 + DIGEST_BYTES


def _secret_json(secret: KeptSecret) -> dict[str, Any]:
    packed = b"".join(block.bits.to_bytes(2, "big") + block.digest for block in secret.blocks)
    return {"name": secret.name, "hosts": sorted(secret.hosts), "length": secret.length,
            "blocks": base64.b64encode(packed).decode()}


def _secret_of(raw: Mapping[str, Any]) -> KeptSecret:
    length = int(raw["length"])
    packed = base64.b64decode(str(raw["blocks"]), validate=True)
    offsets = block_offsets(length)
    if not offsets or len(packed) != _BLOCK_WIRE * len(offsets):
        raise ValueError(f"secret {raw.get('name')!r}: {len(packed)} bytes of blocks for a length of {length}")
    size = min(WINDOW, length)
    blocks = tuple(Block(offset, size, int.from_bytes(packed[i * _BLOCK_WIRE : i * _BLOCK_WIRE + 2], "big"),
                         packed[i * _BLOCK_WIRE + 2 : (i + 1) * _BLOCK_WIRE]) for i, offset in enumerate(offsets))
    return KeptSecret(str(raw["name"]), frozenset(str(host).lower() for host in raw["hosts"]), length, blocks)


def _projection_bits(table: bytes, block: bytes) -> int:
    bits = 0
    for bit in block.translate(table):
        bits = bits << 1 | bit
    return bits


def fingerprint_of(values: Mapping[str, bytes], hosts: Mapping[str, Iterable[str]],
                   key: bytes | None = None) -> SecretFingerprint:
    """The keys door's fingerprint of `values` (name → secret bytes) under `key` (default: 32 random bytes)."""
    key = random.token_bytes(KEY_BYTES) if key is None else key
    table = projection_table(key)
    kept, unmatched = [], []
    for name, value in sorted(values.items()):
        offsets = block_offsets(len(value))
        if not offsets:
            unmatched.append(name)
            continue
        length = min(WINDOW, len(value))
        blocks = tuple(Block(o, length, _projection_bits(table, value[o : o + length]),
                             _digest(key, value[o : o + length])) for o in offsets)
        kept.append(KeptSecret(name, frozenset(h.lower() for h in hosts.get(name, ())), len(value), blocks))
    return SecretFingerprint(key, tuple(kept), tuple(unmatched))


def occurrences(haystack: bytes | bytearray, needle: bytes, start: int = 0) -> Iterator[int]:
    """Every offset at or after `start` where `needle` begins in `haystack`, in order (searched FIND_WINDOW bytes
    at a time; the windows overlap by len(needle) - 1, so one that straddles two is found once)."""
    reach = len(needle) - 1
    while start < len(haystack):
        end = start + FIND_WINDOW + reach
        at = haystack.find(needle, start, end)
        while at >= 0:
            yield at
            at = haystack.find(needle, at + 1, end)
        start += FIND_WINDOW


def _needle(bits: int, length: int) -> bytes:
    projected = bytes((bits >> (length - 1 - i)) & 1 for i in range(length))
    return packed_windows(projected)


@dataclass(frozen=True)
class _Probe:
    secret: KeptSecret
    block: Block


class SecretMatcher:
    """Finds blocks of the fingerprint's secrets in bytes; `stream()` makes a scanner that keeps state."""

    def __init__(self, fingerprint: SecretFingerprint) -> None:
        self.fingerprint = fingerprint
        self._table = fingerprint.table
        self._key = fingerprint.key
        probes: dict[bytes, list[_Probe]] = {}
        for secret in fingerprint.secrets:
            for block in secret.blocks:
                probes.setdefault(_needle(block.bits, block.length), []).append(_Probe(secret, block))
        self._probes = probes
        # No block is shorter: a text shorter than this holds none (callers skip it without scanning).
        self.shortest = min((probe.block.length for found in probes.values() for probe in found), default=0)

    def find(self, data: bytes, min_end: int = 0) -> Iterator[Match]:
        """Every confirmed block in `data` ending past `min_end`, in no particular order."""
        if not self._probes or len(data) < self.shortest:
            return
        windows = packed_windows(data.translate(self._table))
        for needle, probes in self._probes.items():
            for at in occurrences(windows, needle, max(0, min_end - len(needle) - 6)):
                for probe in probes:
                    end = at + probe.block.length
                    if end > min_end and _digest(self._key, data[at:end]) == probe.block.digest:
                        yield Match(probe.secret, at, end, probe.block.offset)

    def candidates(self, data: bytes) -> int:
        """How many prefilter hits `data` holds (the bench's false-candidate count; each costs one digest)."""
        windows = packed_windows(data.translate(self._table))
        count = 0
        for needle, probes in self._probes.items():
            count += len(probes) * sum(1 for _ in occurrences(windows, needle))
        return count

    def first(self, data: bytes, min_end: int = 0) -> Match | None:
        """The match in `data` that ends first (past `min_end`), or None."""
        return min(self.find(data, min_end), key=lambda match: match.end, default=None)

    def spans(self, data: bytes) -> list[tuple[int, int, KeptSecret]]:
        """Where each found secret would lie in `data` (clipped to it), overlapping spans merged."""
        found = sorted((max(0, m.start - m.secret_offset), min(len(data), m.start - m.secret_offset + m.secret.length),
                        m.secret) for m in self.find(data))
        merged: list[tuple[int, int, KeptSecret]] = []
        for start, end, secret in found:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
            else:
                merged.append((start, end, secret))
        return merged

    def stream(self, history: bytes = b"") -> MatchStream:
        """A scanner for one stream, seeded with the bytes that came before it (a file's tail, earlier writes)."""
        return MatchStream(self, history)


@dataclass(frozen=True)
class StreamFinding:
    """A kept secret found in a stream: which one, and where its block ends (from the first byte fed)."""

    secret: KeptSecret
    end: int


class MatchStream:
    """Feed chunks in order; the first finding sticks. Blocks that cross chunk boundaries are found."""

    def __init__(self, matcher: SecretMatcher, history: bytes = b"") -> None:
        self._matcher = matcher
        self._carry = history[-CARRY:] if CARRY else b""
        self._fed = 0
        self.finding: StreamFinding | None = None

    def feed(self, chunk: bytes | bytearray) -> StreamFinding | None:
        """Scan `chunk` (only blocks reaching into it count); the finding once one is seen."""
        if self.finding is not None or not chunk:
            return self.finding
        window = self._carry + chunk
        hit = self._matcher.first(window, len(self._carry))
        if hit is not None:
            self.finding = StreamFinding(hit.secret, self._fed + hit.end - len(self._carry))
        self._fed += len(chunk)
        self._carry = window[-CARRY:]
        return self.finding
