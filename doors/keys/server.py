"""The keys door: holds every secret of the session and releases each one only sealed, to an edge-listed door.

Secrets arrive as inherited fds named in the contract (`rows["secret_fds"]`), read once at start and closed;
the door never opens a path. A release is `POST /v0/keys/release` (doors/keys/_request.py); its answer holds
the secret only sealed with HPKE to the caller's one-time key, and its audit event never holds a value.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from doors._http import Request, Response, Route, json_response
from doors._refusal import DoorRefused, Refusal
from doors._secret_match import SecretFingerprint, fingerprint_of
from doors.keys._policy import Ask, Grant, Ledger, SecretRow, decide, secret_rows
from doors.keys._request import MAX_BODY_BYTES, RELEASE_PATH, parse_ask
from doors.keys._seal import SUITE_NAME, Binding, seal
from doors.keys._sealed_fds import open_sealed_fds
from pki.vocabulary import fingerprint_message

if TYPE_CHECKING:
    from doors._contract import DoorContract

SECRET_FDS_ROW = "secret_fds"
MACHINE_KEY_ROW = "machine_key_fd"  # present when a secret is sealed at rest (doors/keys/_sealed_fds.py)
MAX_SECRET_BYTES = 64 * 1024
HELD_ROWS = frozenset({"secrets"})
AuditSink = Callable[[dict[str, Any]], None]
Clock = Callable[[], float]


def read_secret_fd(fd: int, name: str) -> bytes:
    """The secret behind inherited fd `fd` (one trailing newline dropped); the fd is closed."""
    try:
        chunks: list[bytes] = []
        offset = 0
        while offset <= MAX_SECRET_BYTES:
            chunk = os.pread(fd, MAX_SECRET_BYTES + 1 - offset, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
    finally:
        os.close(fd)
    value = b"".join(chunks)
    if len(value) > MAX_SECRET_BYTES:
        raise ValueError(f"secret {name!r} is larger than {MAX_SECRET_BYTES} bytes")
    value = value.removesuffix(b"\n").removesuffix(b"\r")
    if not value:
        raise ValueError(f"secret {name!r} is empty")
    return value


def read_secrets(rows: Mapping[str, Any]) -> dict[str, bytes]:
    """Every secret the contract's rows name, read from its inherited fd."""
    fds = {str(name): int(fd) for name, fd in dict(rows.get(SECRET_FDS_ROW, {})).items()}
    missing = sorted(set(rows.get("secrets", {})) - set(fds))
    if missing:
        raise ValueError(f"the keys door was given no fd for secret(s) {missing}")
    stored = {str(name): str(row["sealed"]) for name, row in dict(rows.get("secrets", {})).items() if row.get("sealed")}
    opened = open_sealed_fds({name: (fds.pop(name), stored[name]) for name in stored}, rows.get(MACHINE_KEY_ROW))
    return {**opened, **{name: read_secret_fd(fd, name) for name, fd in sorted(fds.items())}}


class KeysDoor:
    """The release route over the rows, the secrets and a ledger; `clock` is injectable for tests."""

    def __init__(self, rows: Mapping[str, SecretRow], secrets: Mapping[str, bytes], audit: AuditSink,
                 clock: Clock = time.time) -> None:
        self.rows = dict(rows)
        self._secrets = dict(secrets)
        # What the other doors and the audit get instead of a value (docs/decisions/keys.md, "Fingerprint").
        self.fingerprint: SecretFingerprint = fingerprint_of(self._secrets, {n: r.hosts for n, r in self.rows.items()})
        self.ledger = Ledger()
        self.audit = audit
        self.clock = clock

    def routes(self) -> list[Route]:
        """The routes run_door serves next to hello."""
        return [Route("POST", RELEASE_PATH, self.release, max_body_bytes=MAX_BODY_BYTES)]

    async def release(self, request: Request) -> Response:
        """Decide, seal and answer one release; every outcome is one audit event."""
        try:
            ask, wire = parse_ask(request.json(), request.peer_role, request.peer_id or "")
        except DoorRefused as refused:
            self._audit_refused(request, None, refused.refusal)
            raise
        outcome = decide(self.rows, self.ledger, ask, int(self.clock()))
        if isinstance(outcome, Refusal):
            self._audit_refused(request, ask, outcome)
            raise DoorRefused(outcome)
        return self._sealed(ask, wire, outcome)

    def _sealed(self, ask: Ask, wire: bytes, grant: Grant) -> Response:
        binding = Binding(ask.requester_id, ask.name, ask.host, ask.request_id, grant.expires_at)
        blob = seal(self._secrets[ask.name], wire, binding)
        self.audit(_event(ask.requester_id, ask, "release", grant.row, 200))
        return json_response({"sealed": base64.b64encode(blob).decode(), "expires_at": grant.expires_at,
                              "suite": SUITE_NAME})

    def _audit_refused(self, request: Request, ask: Ask | None, refusal: Refusal) -> None:
        self.audit(_event(request.peer_id or "", ask, "refuse", refusal.row, refusal.status))


def _event(requester: str, ask: Ask | None, decision: str, row: str, status: int) -> dict[str, Any]:
    return {"door": "keys", "kind": "keys.release", "requester": requester,
            "name": ask.name if ask else "", "host": ask.host if ask else "",
            "request_id": ask.request_id if ask else "", "decision": decision, "row": row, "status": status}


def build(rows: Mapping[str, Any], audit: AuditSink, clock: Clock = time.time) -> KeysDoor:
    """The keys door from its contract rows: reads (and closes) every secret fd."""
    return KeysDoor(secret_rows(rows), read_secrets(rows), audit, clock)


def describe_rows(rows: Mapping[str, Any]) -> dict[str, Any]:
    """The rows as hello shows them: no fd numbers."""
    return {key: value for key, value in rows.items() if key not in (SECRET_FDS_ROW, MACHINE_KEY_ROW)}


def serve(contract: DoorContract) -> None:
    """Run the keys door process from its contract (what the launcher calls in the forked child)."""
    from dataclasses import replace

    from doors._door import run_door

    built: list[KeysDoor] = []

    def routes(runtime: Any) -> list[Route]:
        # Inside run_door, so a secret fd that cannot be read is reported as the door's fatal error.
        try:
            built.append(build(contract.rows, runtime.audit))
        except ValueError as exc:  # its words name the row and hold no value: the person is shown them too
            print(f"keys door: {exc}", file=sys.stderr, flush=True)
            raise
        return built[0].routes()

    def announce() -> list[dict[str, Any]]:  # before ready: the launcher hands it to fs, net and its audit
        return [fingerprint_message(part) for part in built[0].fingerprint.parts()]

    run_door(replace(contract, rows=describe_rows(contract.rows)), routes, held_rows=HELD_ROWS, announce=announce)
