"""Test support, like trustme: a whole session PKI in memory, and leaves with exactly one thing wrong.

Pure (no fork); `write_svid` is the only function that touches the disk, for tests only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from pki.bundle import bundle_pem, svid_pem
from pki.issue import LeafSpec, PrivateKey, issue_leaf, leaf_spec, new_ca, new_key, sign_leaf
from pki.spiffe import SessionIdentity
from pki.vocabulary import ROLES

ODD_KINDS = (
    "expired",
    "not_yet_valid",
    "two_uris",
    "no_uri",
    "dns_only",
    "ca_flag",
    "wrong_eku",
    "wrong_key_usage",
    "other_trust_domain",
    "other_session",
    "self_signed",
    "other_ca",
)
# The CA is backdated this far so an expired leaf can still lie inside the CA's validity.
_CA_HEADROOM = dt.timedelta(minutes=10)
_ODD_SPAN = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class SessionPKI:
    """A session CA and one SVID per role, all in memory."""

    trust_domain: str
    session_id: str
    created: dt.datetime
    ttl_s: int
    ca_key: PrivateKey
    ca_cert: x509.Certificate
    leaves: dict[str, tuple[PrivateKey, x509.Certificate]]

    @classmethod
    def create(
        cls,
        trust_domain: str = "test.sharness.test",
        session_id: str = "0123abcd",
        roles: Iterable[str] = ROLES,
        ttl_s: int = 3600,
        now: dt.datetime | None = None,
    ) -> SessionPKI:
        """Mint a CA (valid from 10 minutes before `now`, default the clock) and a conformant leaf for every role."""
        now = dt.datetime.now(dt.UTC) if now is None else now
        ca_key, ca_cert = new_ca(trust_domain, ttl_s + int(_CA_HEADROOM.total_seconds()), now - _CA_HEADROOM)
        leaves = {
            role: issue_leaf(ca_key, ca_cert, SessionIdentity(trust_domain, session_id, role), now, ttl_s)
            for role in roles
        }
        return cls(trust_domain, session_id, now, ttl_s, ca_key, ca_cert, leaves)

    def identity(self, role: str) -> SessionIdentity:
        """The identity `role` has in this session."""
        return SessionIdentity(self.trust_domain, self.session_id, role)

    def cert(self, role: str) -> x509.Certificate:
        """The leaf certificate of `role`."""
        return self.leaves[role][1]

    def svid_pem(self, role: str) -> bytes:
        """Key then leaf, PEM: what `role`'s memfd would hold."""
        return svid_pem(*self.leaves[role])

    def bundle_pem(self) -> bytes:
        """The trust bundle (the CA certificate, PEM)."""
        return bundle_pem(self.ca_cert)

    def write_svid(self, role: str, directory: str | os.PathLike[str]) -> str:
        """Write `role`'s key+leaf to `<directory>/<role>.svid.pem` (0600); for tests only."""
        path = os.path.join(os.fspath(directory), f"{role}.svid.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(self.svid_pem(role))
        return path

    def odd_leaf(self, kind: str, role: str = "app") -> bytes:
        """Key+leaf PEM for `role` with exactly one thing wrong, named by `kind` (see ODD_KINDS)."""
        if kind not in ODD_KINDS:
            raise ValueError(f"odd leaf kind {kind!r} is not one of {', '.join(ODD_KINDS)}")
        if kind == "other_ca":
            # The same instant as this session's: only the signer differs, even across a second's boundary.
            other = SessionPKI.create(self.trust_domain, self.session_id, (role,), self.ttl_s, self.created)
            return other.svid_pem(role)
        key = new_key()
        spec = self._odd_spec(kind, role)
        if kind == "self_signed":
            return svid_pem(key, sign_leaf(spec, key, key, spec.subject))
        return svid_pem(key, sign_leaf(spec, key, self.ca_key, self.ca_cert.subject))

    def _odd_spec(self, kind: str, role: str) -> LeafSpec:
        spec = leaf_spec(self.ca_cert, self.identity(role), self.created, self.ttl_s)
        ca_start = self.ca_cert.not_valid_before_utc
        sid, td = self.session_id, self.trust_domain
        other_role = next(r for r in ROLES if r != role)
        changes: dict[str, dict[str, Any]] = {
            "expired": {"not_before": ca_start, "not_after": ca_start + _ODD_SPAN},
            "not_yet_valid": {"not_before": self.created + _ODD_SPAN},
            "two_uris": {"uris": (*spec.uris, self.identity(other_role).uri())},
            "no_uri": {"uris": ()},
            "dns_only": {"uris": (), "dns_names": (f"{role}.sharness.test",)},
            "ca_flag": {"ca": True},
            "wrong_eku": {"eku": (ExtendedKeyUsageOID.SERVER_AUTH,)},
            "wrong_key_usage": {"key_usage": _SIGN_AND_ENCIPHER},
            "other_trust_domain": {"uris": (f"spiffe://other.sharness.test/session/{sid}/{role}",)},
            "other_session": {"uris": (f"spiffe://{td}/session/{_other_session_id(sid)}/{role}",)},
            "self_signed": {},
        }
        return dataclasses.replace(spec, **changes[kind])


def _other_session_id(session_id: str) -> str:
    """A valid session id that differs from `session_id`."""
    return "ffffffff" if session_id != "ffffffff" else "00000000"


_SIGN_AND_ENCIPHER = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=True,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)
