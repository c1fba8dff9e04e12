"""The session's audit log: structlog JSON lines, hash-chained, the head signed by a key that lives only for
the session. The launcher is the only writer; no secret enters a line: the guard replaces each with a
fingerprint keyed by a second key that also lives only for the session, and keeps the rest of the event.
Lines are written as they come and fsynced in groups (`commit`, once per supervisor round).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from doors import SecretFingerprint, SecretMatcher
from launcher.lifecycle.audit_verify import (
    CLOSE_EVENT,
    FORBID_EVENT,
    FORMAT,
    LOG_NAME,
    OPEN_EVENT,
    PUB_NAME,
    SIG_NAME,
    genesis_hash,
    head_message,
    key_fingerprint,
    line_hash,
)
from launcher.policy.audit_guard import (
    MIN_KEPT_CHARS,
    Kept,
    kept_pattern,
    redact_event,
    reserved_refusal,
    texts_of,
)
from pki.vocabulary import AUDIT_ROOT, valid_sid

if TYPE_CHECKING:  # imported when a log opens, after the last fork (the launcher's imports hold no cryptography)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MAX_LINE_BYTES = 256 * 1024
FINGERPRINT_HEX = 12  # 48 bits of HMAC-SHA256: ties lines together within a session, proves nothing outside it


class AuditError(Exception):
    """The audit log cannot be written as promised."""


class AuditRefused(AuditError, ValueError):
    """An event the log cannot hold as it is (no name, a field the log writes itself, a key not a string)."""

    def __init__(self, event: object, where: str, rule: str) -> None:
        super().__init__(
            f"audit event {event!r} refused: {where} {rule}; log a name or a fingerprint instead"
        )
        self.where = where
        self.rule = rule


# --- the writer ---------------------------------------------------------------------------------------


@dataclass
class _Chain:
    sid: str
    seq: int = 0
    head: str = ""


def _refuse_non_json(value: object) -> Any:
    raise TypeError(f"audit values must be JSON (str, number, bool, None, list, dict), not {type(value)}")


class _LineSink:
    """structlog's output: appends one rendered line, then advances the chain to it."""

    def __init__(self, fd: int, chain: _Chain) -> None:
        self._fd = fd
        self._chain = chain

    def msg(self, rendered: str) -> None:
        line = rendered.encode()
        if len(line) > MAX_LINE_BYTES:
            raise AuditError(f"audit line of {len(line)} bytes is over the {MAX_LINE_BYTES} byte limit")
        data = memoryview(line + b"\n")
        while data:
            data = data[os.write(self._fd, data) :]
        self._chain.seq += 1
        self._chain.head = line_hash(line)


@dataclass(frozen=True)
class _Found:
    text: str

    def group(self) -> str:
        return self.text


class _FingerprintKept:
    """The keys door's fingerprint as what the guard redacts with: the exact values first (when any), then each
    span where a fingerprinted secret lies (widened to whole UTF-8 characters) becomes the placeholder."""

    def __init__(self, matcher: SecretMatcher, exact: Kept | None) -> None:
        self.matcher = matcher
        self.exact = exact

    def sub(self, repl: Callable[[Any], str], string: str, /) -> str:
        if self.exact is not None:
            string = self.exact.sub(repl, string)
        if len(string) < self.matcher.shortest:  # characters are at least as many bytes: no block fits
            return string
        data = string.encode()
        spans = self.matcher.spans(data)
        if not spans:
            return string
        pieces, last = [], 0
        for start, end, _ in spans:
            while start > 0 and data[start] & 0xC0 == 0x80:
                start -= 1
            while end < len(data) and data[end] & 0xC0 == 0x80:
                end += 1
            pieces += [data[last:start].decode(), repl(_Found(data[start:end].decode()))]
            last = end
        return "".join([*pieces, data[last:].decode()])


class _Guard:
    """The structlog processor that redacts: its fingerprint key (in memory only, for this session) and the
    values the log keeps."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._kept: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._fingerprint: _FingerprintKept | None = None

    def fingerprint(self, text: str) -> str:
        """HMAC-SHA256 of `text` under the session's key, truncated: the same value, the same fingerprint."""
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()[:FINGERPRINT_HEX]

    def keep(self, value: str) -> None:
        self._kept.add(value)
        self._pattern = kept_pattern(self._kept)
        if self._fingerprint is not None:
            self._fingerprint.exact = self._pattern

    def keep_fingerprint(self, fingerprint: SecretFingerprint) -> None:
        self._fingerprint = _FingerprintKept(SecretMatcher(fingerprint), self._pattern)

    def forget(self) -> None:
        """Drop the key, the kept values and the fingerprint (the log is closed)."""
        self._key, self._kept, self._pattern, self._fingerprint = b"", set(), None, None

    def _kept_for(self, event: Mapping[str, Any]) -> Kept | None:
        """The fingerprint when one of its secrets is somewhere in the event (one scan of all its text joined),
        else only the exact values: most lines hold no secret, and scanning each string alone costs more."""
        if self._fingerprint is None:
            return self._pattern
        joined = "\0".join(texts_of(event)).encode()
        return self._fingerprint if self._fingerprint.matcher.first(joined) is not None else self._pattern

    def __call__(self, _logger: object, _method: str, event_dict: MutableMapping[str, Any]) -> Mapping[str, Any]:
        kept = self._kept_for(event_dict)
        redacted = redact_event(event_dict, self.fingerprint, kept)
        refused = reserved_refusal(redacted)
        if refused is not None:
            raise AuditRefused(refused.event, refused.where, refused.rule)
        return redacted


def _line_writer(fd: int, chain: _Chain, guard: _Guard) -> Callable[[Mapping[str, object]], None]:
    """What writes one event: structlog's processors, run in order over the event, the last one's line to the sink.

    The processors are called here directly, as structlog's BoundLogger calls them (each with the sink and the
    method name `msg`), without binding a logger per event: the same lines, at a fraction of the cost."""
    # Here, not at the top: structlog (and asyncio with it) is ~40 ms of import that no door needs; a session opens
    # its log after its last fork, so the launcher pays it while the app runs (docs/decisions/bench.md, "launcher").
    import structlog

    def link(_logger: object, _method: str, event_dict: MutableMapping[str, Any]) -> Mapping[str, Any]:
        ts, event = event_dict.pop("ts"), event_dict.pop("event")
        return {"seq": chain.seq + 1, "ts": ts, "event": event, **event_dict, "prev": chain.head}

    sink = _LineSink(fd, chain)
    # What json.dumps would build for these arguments on every line, built once: the same text.
    encoder = json.JSONEncoder(default=_refuse_non_json, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    processors: list[Callable[[Any, str, Any], Any]] = [
        guard,  # first: it refuses a door's own `ts`, `seq` or `prev` before the log adds its own
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        link,
        structlog.processors.JSONRenderer(serializer=lambda event_dict, **_: encoder.encode(event_dict)),
    ]

    def emit(event: Mapping[str, object]) -> None:
        rendered: Any = dict(event)
        for processor in processors:
            rendered = processor(sink, "msg", rendered)
        sink.msg(rendered)

    return emit


def _make_private_dir(path: str) -> None:
    """mkdir -p whatever the umask: missing parents 0755 (others live beside, e.g. /var/lib/sharness/hello),
    the leaf 0700."""
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for index, directory in enumerate(reversed(missing)):
        mode = 0o700 if index == len(missing) - 1 else 0o755
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            continue
        os.chmod(directory, mode)


def _write_file(path: str, data: bytes, mode: int) -> None:
    """Write `path` whole and durably (tmp + fsync + rename): a reader sees all of it or none."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


@dataclass(frozen=True)
class AuditStatistics:
    lines: int
    commits: int  # fsyncs of the log (one per group of lines, and the close)


class AuditLog:
    """One session's audit log: `create`, `append` events, `commit` groups of them, `close` to sign the head."""

    def __init__(self, directory: str, sid: str, fd: int, *, durable: bool) -> None:
        self.directory = directory
        self.sid = sid
        self.path = os.path.join(directory, LOG_NAME)
        self._fd = fd
        self._durable = durable
        self._uncommitted = 0
        self._commits = 0
        self._chain = _Chain(sid, head=genesis_hash(sid))
        self._guard = _Guard()
        self._emit = _line_writer(fd, self._chain, self._guard)
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self._key: Ed25519PrivateKey | None = Ed25519PrivateKey.generate()  # in memory only, for this session
        public_key = self._key.public_key()
        self.fingerprint = key_fingerprint(public_key)
        self.public_key_pem = public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()
        self._closed: tuple[str, str] | None = None

    @classmethod
    def create(cls, directory: str | None, sid: str, *, durable: bool = True) -> AuditLog:
        """A new log in `directory` (default `/var/lib/sharness/sessions/<sid>/`, 0700), first line written.

        `durable`: `commit` fsyncs what was appended since the last commit (without it only `close` does).
        """
        if not valid_sid(sid):
            raise AuditError(f"session id must be 8 lowercase hex characters, got {sid!r}")
        directory = os.path.normpath(directory or os.path.join(AUDIT_ROOT, sid))
        _make_private_dir(directory)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(os.path.join(directory, LOG_NAME), flags, 0o600)
        except FileExistsError:
            raise AuditError(f"{directory}/{LOG_NAME} exists: a log is never reopened") from None
        log = cls(directory, sid, fd, durable=durable)
        _write_file(os.path.join(directory, PUB_NAME), log.public_key_pem.encode(), 0o644)
        log.append({"event": OPEN_EVENT, "sid": sid, "format": FORMAT, "alg": "Ed25519",
                    "key": log.fingerprint})
        log.commit()
        return log

    @property
    def lines(self) -> int:
        return self._chain.seq

    def size_bytes(self) -> int:
        """How much the log holds on disk now."""
        return os.fstat(self._fd).st_size

    def statistics(self) -> AuditStatistics:
        return AuditStatistics(self._chain.seq, self._commits)

    def forbid(self, secret: str) -> None:
        """Redact, from now on, this exact value wherever it appears (`[redacted:kept:<fp>]`); at least 8
        characters, since shorter ones would match ordinary words."""
        if len(secret) < MIN_KEPT_CHARS:
            raise AuditError(f"a value to forbid must be at least {MIN_KEPT_CHARS} characters "
                             "(shorter ones match too much)")
        self._guard.keep(secret)

    def forbid_fingerprint(self, fingerprint: SecretFingerprint) -> None:
        """Redact, from now on, every span where one of the keys door's secrets lies (a whole secret, or any run
        of 31 bytes of one: doors/_secret_match.py), found by its fingerprint; the log never holds a value."""
        self._guard.keep_fingerprint(fingerprint)

    def append(self, event: Mapping[str, object]) -> None:
        """Write one event (`{"event": "<what>", ...}`), each secret in it replaced by its fingerprint.

        An `audit.forbid` event (`name`, `value`) first registers its value (`forbid`), so its own line shows
        only the fingerprint a later line holding the value will show too. AuditRefused when the event has
        no name, a field the log writes itself (`seq`, `ts`, `prev`) or a key that is not a string.
        """
        if self._closed is not None:
            raise AuditError(f"audit log {self.path} is closed and signed; nothing more can be appended")
        bad_keys = [key for key in event if not isinstance(key, str)]
        if bad_keys:
            raise AuditRefused(event.get("event"), f"the key {bad_keys[0]!r}", "is not a string")
        if event.get("event") == FORBID_EVENT:
            event = self._registered(event)
        self._emit(event)
        self._uncommitted += 1

    def _registered(self, event: Mapping[str, object]) -> Mapping[str, object]:
        value = event.get("value")
        if not isinstance(value, str) or len(value) < MIN_KEPT_CHARS:
            return {**event, "value": None, "kept": False,
                    "why": f"a value to keep is a string of at least {MIN_KEPT_CHARS} characters"}
        self.forbid(value)
        return {**event, "kept": True}

    def commit(self) -> None:
        """fsync the lines appended since the last commit (one fsync for the group); nothing to do, nothing done."""
        if self._durable and self._uncommitted:
            os.fsync(self._fd)
            self._commits += 1
        self._uncommitted = 0

    def close(self) -> tuple[str, str]:
        """Write the close line, sign the head, write audit.sig; return (signature path, public key PEM)."""
        if self._closed is not None:
            return self._closed
        assert self._key is not None
        self.append({"event": CLOSE_EVENT, "lines": self._chain.seq + 1})
        os.fsync(self._fd)
        self._commits += 1
        os.close(self._fd)
        self._guard.forget()
        chain = self._chain
        signature = self._key.sign(head_message(chain.sid, chain.seq, chain.head))
        self._key = None  # the private key is never written anywhere; drop it as soon as it has signed
        document = {
            "format": FORMAT, "alg": "Ed25519", "sid": chain.sid, "seq": chain.seq, "head": chain.head,
            "key": self.fingerprint, "signature": base64.b64encode(signature).decode(),
        }
        sig_path = os.path.join(self.directory, SIG_NAME)
        _write_file(sig_path, json.dumps(document, indent=2).encode() + b"\n", 0o644)
        with contextlib.suppress(OSError):
            dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            os.fsync(dir_fd)
            os.close(dir_fd)
        self._closed = (sig_path, self.public_key_pem)
        return self._closed
