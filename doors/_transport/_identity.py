"""After the handshake: the door admits a client (SVID + edge), the client checks the door. Pure."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

from cryptography import x509

from doors._http import ClientResponse, Response, error_response
from doors._refusal import DoorRefused, Refusal, read_refusal
from pki.edges import EdgePolicy
from pki.spiffe import SessionIdentity
from pki.svid import SvidVerdict, check_svid

# Error rows of a transport refusal; a 403 with one of these is raised as DoorRefused by clients.
EDGE_ROW = "edges"
SVID_ROW = "svid"
TRANSPORT_ROWS = frozenset({EDGE_ROW, SVID_ROW})
SVID_HINT = "connect with this session's SVID for your role (SHARNESS_SVID for the app)"
# Distinct peer certificates whose accepted verdict is kept: a session has one SVID per role.
SVID_VERDICTS_KEPT = 64


@functools.lru_cache(maxsize=SVID_VERDICTS_KEPT)
def _verdict_in_validity(cert_der: bytes, trust_domain: str, session_id: str,
                         expected_role: str | None) -> tuple[SvidVerdict, dt.datetime, dt.datetime] | None:
    """check_svid's verdict on `cert_der` at its own notBefore, with its validity: all but the clock."""
    try:
        cert = x509.load_der_x509_certificate(cert_der)
    except ValueError:
        return None
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    verdict = check_svid(cert, trust_domain=trust_domain, session_id=session_id, now=start,
                         expected_role=expected_role)
    return verdict, start, end


def checked_svid(cert_der: bytes, *, trust_domain: str, session_id: str, now: dt.datetime,
                 expected_role: str | None = None) -> SvidVerdict:
    """check_svid at `now`, parsing each accepted certificate once (about 20 µs a connection, each side).

    Only an acceptance is reused, and only while `now` is inside the certificate's validity; anything
    else runs check_svid again, so a refusal keeps its own words. OpenSSL checked the chain already.
    """
    kept = _verdict_in_validity(cert_der, trust_domain, session_id, expected_role)
    if kept is not None:
        verdict, start, end = kept
        aware = now if now.tzinfo is not None else now.replace(tzinfo=dt.UTC)
        if verdict.ok and start <= aware <= end:
            return verdict
    return check_svid(cert_der, trust_domain=trust_domain, session_id=session_id, now=now,
                      expected_role=expected_role)


@dataclass(frozen=True)
class Admission:
    """The door's decision on one connection: admitted with the client's identity, or refused."""

    ok: bool
    client: SessionIdentity | None
    stage: str
    reason: str

    @property
    def row(self) -> str:
        return EDGE_ROW if self.stage == "edge" else SVID_ROW


def admit_client(
    cert_der: bytes | None,
    *,
    door: SessionIdentity,
    edge_policy: EdgePolicy,
    now: dt.datetime,
) -> Admission:
    """Check the client's SVID for this session, then the edge (client role, door role)."""
    if cert_der is None:
        return Admission(False, None, "svid", "client presented no certificate")
    verdict = checked_svid(cert_der, trust_domain=door.trust_domain, session_id=door.session_id, now=now)
    if not verdict.ok or verdict.identity is None:
        return Admission(False, None, "svid", verdict.reason)
    decision = edge_policy.decide(verdict.identity.role, door.role)
    if not decision.allowed:
        return Admission(False, verdict.identity, "edge", decision.reason)
    return Admission(True, verdict.identity, "edge", decision.reason)


def refusal_response(admission: Admission, door_role: str) -> Response:
    """The 403 a refused client gets on its first request; the connection closes after it."""
    hint = ("ask the person to add this edge to the manifest row `edges`" if admission.row == EDGE_ROW
            else SVID_HINT)
    return error_response(Refusal(403, admission.row, door_role, admission.reason, hint), close=True)


def refusal_event(door: SessionIdentity, stage: str, reason: str, client: SessionIdentity | None,
                  peer: dict[str, int]) -> dict[str, Any]:
    """One structured event per refused connection (no secret: identities, reasons, uids)."""
    return {
        "kind": "transport.refused",
        "door": door.role,
        "stage": stage,
        "client_role": client.role if client else None,
        "client_id": client.uri() if client else None,
        "reason": reason,
        **peer,
    }


def check_door(
    cert_der: bytes | None, *, dialled: str, trust_domain: str, session_id: str, now: dt.datetime
) -> SvidVerdict:
    """The client's check of the door: a valid SVID of this session whose role is the one dialled."""
    if cert_der is None:
        return SvidVerdict(False, None, "the door presented no certificate")
    return checked_svid(cert_der, trust_domain=trust_domain, session_id=session_id, now=now,
                        expected_role=dialled)


def refusal_from_response(response: ClientResponse, dialled: str) -> DoorRefused | None:
    """A DoorRefused when `response` is the door's transport refusal (403 with an edges/svid row)."""
    if response.status != 403:
        return None
    try:
        shape = response.json()
    except ValueError:
        return None
    if not isinstance(shape, dict) or shape.get("error") not in TRANSPORT_ROWS:
        return None
    return DoorRefused(read_refusal(response.status, shape, who=dialled, row=str(shape["error"])))
