"""The audit log's format and its verification. Pure: bytes in, a verdict out (no files, no clock).

Line i (1-based) is one JSON object with `seq` = i and `prev` = sha256 hex of line i-1's bytes (without its
newline); line 1's `prev` is the hash of a genesis value naming the session. `audit.sig` signs the head
(session, number of lines, hash of the last line) with the session's Ed25519 key. An intact log also says how
many events its `audit.lost` lines count (events a door could not queue or send): intact is not complete.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import rfc8785

if TYPE_CHECKING:  # imported where a key is read (the launcher's imports hold no cryptography)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

FORMAT = "sharness-audit-v1"
LOG_NAME, SIG_NAME, PUB_NAME = "audit.jsonl", "audit.sig", "audit.pub"
OPEN_EVENT = "audit.open"
CLOSE_EVENT = "audit.close"
LOST_EVENT = "audit.lost"  # `role`, `count`: events of that role that never reached the log
FORBID_EVENT = "audit.forbid"  # `role`, `name`, `value`: a value to redact from then on (its own line included)


def genesis_hash(sid: str) -> str:
    """The `prev` of line 1: binds the chain to its session."""
    return hashlib.sha256(f"{FORMAT}\x00genesis\x00{sid}".encode()).hexdigest()


def line_hash(line: bytes) -> str:
    """sha256 hex of one line's bytes, newline excluded."""
    return hashlib.sha256(line).hexdigest()


def head_message(sid: str, seq: int, head: str) -> bytes:
    """The bytes the session key signs: RFC 8785 canonical JSON, with the format as domain separation."""
    return rfc8785.dumps({"format": f"{FORMAT}/head", "sid": sid, "seq": seq, "head": head})


def key_fingerprint(public_key: Ed25519PublicKey) -> str:
    """`sha256:<hex>` of the raw 32-byte public key."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class AuditVerdict:
    intact: bool
    broken_at: int | None
    reason: str
    lines: int = 0
    signer: str | None = None
    lost: int = 0  # events the `audit.lost` lines of an intact log count
    lost_by_role: dict[str, int] = field(default_factory=dict)
    sid: str = ""  # the session the log names
    anchor: str = ""  # who vouched for the key: "registry", "--pubkey", or "directory" (unverified)

    def describe(self) -> str:
        """`intact, N events lost (L lines, signed by <fingerprint>)` or `broken at line N: <reason>`."""
        if self.intact:
            by_role = ", ".join(f"{role} {count}" for role, count in sorted(self.lost_by_role.items()))
            lost = f"{self.lost} event{'' if self.lost == 1 else 's'} lost" + (f": {by_role}" if by_role else "")
            said = f"intact, {lost} (session {self.sid}, {self.lines} lines, signed by {self.signer}"
            if self.anchor == DIRECTORY_ANCHOR:
                return f"{said}; unverified key: only the directory's audit.pub vouches for it)"
            return f"{said}, the key {self.anchor} holds)"
        return f"broken at line {self.broken_at}: {self.reason}"


class _Broken(Exception):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


DIRECTORY_ANCHOR = "directory"


def verify_audit(
    log_bytes: bytes, sig_bytes: bytes | None, pub_pem: bytes | None, *, trusted_pub_pem: bytes | None = None,
    anchor: str = "--pubkey", expected_sid: str | None = None,
) -> AuditVerdict:
    """Check the chain, then the signed head; `trusted_pub_pem` (held by `anchor`: the registry, or --pubkey)
    must sign. `expected_sid`: the session the log's directory is named for."""
    lost: dict[str, int] = {}
    try:
        sid, lines = _walk_chain(log_bytes, lost)
        if expected_sid is not None and sid != expected_sid:
            raise _Broken(1, f"the log is session {sid}'s, in the directory of session {expected_sid} "
                          "(another session's log copied under this one's id)")
        signer = _check_signature(sid, lines, sig_bytes, pub_pem, trusted_pub_pem, anchor)
    except _Broken as broken:
        return AuditVerdict(False, broken.line, broken.reason)
    return AuditVerdict(True, None, "intact", lines=len(lines), signer=signer, lost=sum(lost.values()),
                        lost_by_role=lost, sid=sid, anchor=anchor if trusted_pub_pem is not None else DIRECTORY_ANCHOR)


def log_sid(log_bytes: bytes) -> str | None:
    """The session line 1 names, or None (a broken log: verify_audit says where)."""
    try:
        record = json.loads(log_bytes.split(b"\n", 1)[0])
    except ValueError:
        return None
    sid = record.get("sid") if isinstance(record, dict) else None
    return sid if isinstance(sid, str) else None


def _walk_chain(log_bytes: bytes, lost: dict[str, int]) -> tuple[str, list[bytes]]:
    """(session id, lines) of a log whose every line chains to the one before; `lost` gets each role's count
    of lost events."""
    if not log_bytes:
        raise _Broken(1, "the log is empty (the launcher writes an audit.open line first)")
    lines = log_bytes.split(b"\n")
    if lines[-1]:
        raise _Broken(len(lines), "the last line has no newline (torn write, or edited)")
    lines.pop()
    sid = ""
    expected_prev = ""
    for number, line in enumerate(lines, start=1):
        record = _parse_line(number, line)
        if number == 1:
            sid = _opening_sid(record)
            expected_prev = genesis_hash(sid)
        if record.get("prev") != expected_prev:
            if number == 1:
                raise _Broken(1, f"line 1 does not chain from the genesis of session {sid}")
            raise _Broken(
                number - 1,
                f"its hash is not the prev that line {number} recorded (line {number - 1} was edited)",
            )
        expected_prev = line_hash(line)
        _count_lost(record, lost)
    return sid, lines


def _count_lost(record: dict[str, object], lost: dict[str, int]) -> None:
    count = record.get("count")
    if record.get("event") == LOST_EVENT and isinstance(count, int) and not isinstance(count, bool) and count > 0:
        role = str(record.get("role", ""))
        lost[role] = lost.get(role, 0) + count


def _parse_line(number: int, line: bytes) -> dict[str, object]:
    try:
        record = json.loads(line)
    except ValueError:
        raise _Broken(number, "not a JSON line") from None
    if not isinstance(record, dict):
        raise _Broken(number, "not a JSON object")
    seq = record.get("seq")
    if seq != number:
        raise _Broken(number, f"seq is {seq!r}, not {number} (a line was deleted or inserted before it)")
    return record


def _opening_sid(record: dict[str, object]) -> str:
    sid = record.get("sid")
    if record.get("event") != OPEN_EVENT or not isinstance(sid, str):
        raise _Broken(1, f"line 1 is not the {OPEN_EVENT} line naming the session (the head was deleted?)")
    return sid


def _check_signature(
    sid: str, lines: list[bytes], sig_bytes: bytes | None, pub_pem: bytes | None, trusted_pem: bytes | None,
    anchor: str,
) -> str:
    """The signer's fingerprint, once the signature holds and covers exactly this log."""
    last = len(lines)
    if sig_bytes is None:
        raise _Broken(last, "no signature: audit.sig was removed (or the session never closed its log)")
    signed = _parse_signature(last, sig_bytes)
    key = _signing_key(pub_pem, trusted_pem, last, anchor)
    fingerprint = key_fingerprint(key)
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(signed.signature, head_message(signed.sid, signed.seq, signed.head))
    except InvalidSignature:
        reason = f"audit.sig does not verify with key {fingerprint} (signature forged or edited)"
        raise _Broken(last, reason) from None
    if signed.sid != sid:
        raise _Broken(1, f"the signature is for session {signed.sid}, the log for session {sid}")
    if signed.seq > last:
        raise _Broken(last + 1, f"tail deleted: the signed head is line {signed.seq}, the log ends at {last}")
    if signed.seq < last:
        raise _Broken(signed.seq + 1, f"lines appended after the signed head (line {signed.seq})")
    if signed.head != line_hash(lines[-1]):
        reason = "the chain does not end at the signed head (a re-forged chain, or this line edited)"
        raise _Broken(last, reason)
    return fingerprint


@dataclass(frozen=True)
class _SignedHead:
    sid: str
    seq: int
    head: str
    signature: bytes


def _parse_signature(last: int, sig_bytes: bytes) -> _SignedHead:
    try:
        doc = json.loads(sig_bytes)
        signed = _SignedHead(
            sid=str(doc["sid"]),
            seq=int(doc["seq"]),
            head=str(doc["head"]),
            signature=base64.b64decode(doc["signature"], validate=True),
        )
    except (ValueError, KeyError, TypeError):
        raise _Broken(last, "audit.sig is not a signature document") from None
    if doc.get("format") != FORMAT or doc.get("alg") != "Ed25519":
        raise _Broken(last, f"audit.sig is not a {FORMAT} Ed25519 signature")
    return signed


def _load_key(pem: bytes, what: str, last: int) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError:
        raise _Broken(last, f"{what} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise _Broken(last, f"{what} is not an Ed25519 key")
    return key


def _signing_key(pub_pem: bytes | None, trusted_pem: bytes | None, last: int, anchor: str) -> Ed25519PublicKey:
    if trusted_pem is not None:
        trusted = _load_key(trusted_pem, f"the key {anchor} holds", last)
        beside = None if pub_pem is None else _load_key(pub_pem, "audit.pub", last)
        if beside is not None and key_fingerprint(beside) != key_fingerprint(trusted):
            reason = (f"audit.pub is not the session's key ({anchor} holds {key_fingerprint(trusted)}): "
                      "the log may be re-forged")
            raise _Broken(1, reason)
        return trusted
    if pub_pem is None:
        raise _Broken(last, "no public key: audit.pub is missing (give the session's key with --pubkey)")
    return _load_key(pub_pem, "audit.pub", last)
