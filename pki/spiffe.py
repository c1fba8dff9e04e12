"""SPIFFE IDs: parse and format per the SPIFFE-ID standard, and this project's session identities.

Pure: strings in, values or `SpiffeIdError` out. Ours: `spiffe://<trust-domain>/session/<sid>/<role>`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from pki.vocabulary import ROLES, SID_LENGTH, valid_sid

SCHEME = "spiffe"
MAX_ID_BYTES = 2048
MAX_TRUST_DOMAIN_CHARS = 255

_TRUST_DOMAIN_CHARS = frozenset(string.ascii_lowercase + string.digits + ".-_")
_SEGMENT_CHARS = frozenset(string.ascii_letters + string.digits + ".-_")


class SpiffeIdError(ValueError):
    """A string is not a SPIFFE ID (or not one of ours); the message says which rule it broke."""


def validate_trust_domain(td: str) -> str:
    """Return `td` when it is a valid SPIFFE trust domain name, else raise SpiffeIdError."""
    if not td:
        raise SpiffeIdError("trust domain is empty")
    if len(td) > MAX_TRUST_DOMAIN_CHARS:
        raise SpiffeIdError(f"trust domain is {len(td)} characters, at most {MAX_TRUST_DOMAIN_CHARS}")
    if ":" in td:
        raise SpiffeIdError("trust domain must not carry a port")
    if "@" in td:
        raise SpiffeIdError("trust domain must not carry userinfo")
    bad = sorted(set(td) - _TRUST_DOMAIN_CHARS)
    if bad:
        raise SpiffeIdError(f"trust domain has character(s) {''.join(bad)!r}: only a-z 0-9 . - _")
    return td


def validate_path(path: str) -> str:
    """Return `path` when it is a valid SPIFFE ID path ('' or '/seg/...'), else raise SpiffeIdError."""
    if path == "":
        return path
    if not path.startswith("/"):
        raise SpiffeIdError("path must start with '/'")
    if path.endswith("/"):
        raise SpiffeIdError("path must not end with '/'")
    for segment in path[1:].split("/"):
        _validate_segment(segment)
    return path


def _validate_segment(segment: str) -> None:
    if segment == "":
        raise SpiffeIdError("path has an empty segment ('//')")
    if segment in (".", ".."):
        raise SpiffeIdError(f"path segment {segment!r} is not allowed")
    bad = sorted(set(segment) - _SEGMENT_CHARS)
    if bad:
        raise SpiffeIdError(f"path segment has character(s) {''.join(bad)!r}: only A-Z a-z 0-9 . - _")


@dataclass(frozen=True)
class SpiffeId:
    """A valid SPIFFE ID: trust domain plus path ('' for the trust domain's own ID)."""

    trust_domain: str
    path: str

    def __post_init__(self) -> None:
        validate_trust_domain(self.trust_domain)
        validate_path(self.path)
        if len(str(self).encode()) > MAX_ID_BYTES:
            raise SpiffeIdError(f"SPIFFE ID is longer than {MAX_ID_BYTES} bytes")

    def __str__(self) -> str:
        return f"{SCHEME}://{self.trust_domain}{self.path}"


def parse_spiffe_id(text: str) -> SpiffeId:
    """Parse `text` strictly per the SPIFFE-ID standard; raise SpiffeIdError naming the broken rule."""
    if not isinstance(text, str):
        raise SpiffeIdError(f"SPIFFE ID must be a str, not {type(text).__name__}")
    if len(text.encode()) > MAX_ID_BYTES:
        raise SpiffeIdError(f"SPIFFE ID is longer than {MAX_ID_BYTES} bytes")
    if not text.isascii():
        raise SpiffeIdError("SPIFFE ID must be ASCII")
    prefix = f"{SCHEME}://"
    if not text.startswith(prefix):
        if text[: len(prefix)].lower() == prefix:
            raise SpiffeIdError("scheme must be lowercase 'spiffe'")
        raise SpiffeIdError("SPIFFE ID must start with 'spiffe://'")
    rest = text[len(prefix) :]
    if "?" in rest:
        raise SpiffeIdError("SPIFFE ID must not carry a query")
    if "#" in rest:
        raise SpiffeIdError("SPIFFE ID must not carry a fragment")
    if "%" in rest:
        raise SpiffeIdError("SPIFFE ID must not carry percent-encoding")
    td, slash, tail = rest.partition("/")
    return SpiffeId(validate_trust_domain(td), validate_path(slash + tail))


def validate_session_id(session_id: str) -> str:
    """Return `session_id` when it is a session id (pki.vocabulary.valid_sid), else raise SpiffeIdError."""
    if not valid_sid(session_id):
        raise SpiffeIdError(f"session id {session_id!r} is not {SID_LENGTH} lowercase hex characters")
    return session_id


def validate_role(role: str) -> str:
    """Return `role` when it is one of ROLES, else raise SpiffeIdError."""
    if role not in ROLES:
        raise SpiffeIdError(f"role {role!r} is not one of {', '.join(ROLES)}")
    return role


@dataclass(frozen=True)
class SessionIdentity:
    """Who a component is in one session: `spiffe://<td>/session/<sid>/<role>`."""

    trust_domain: str
    session_id: str
    role: str

    def __post_init__(self) -> None:
        validate_trust_domain(self.trust_domain)
        validate_session_id(self.session_id)
        validate_role(self.role)

    def spiffe_id(self) -> SpiffeId:
        """This identity as a SpiffeId."""
        return SpiffeId(self.trust_domain, f"/session/{self.session_id}/{self.role}")

    def uri(self) -> str:
        """This identity as the URI that goes into the leaf's SAN."""
        return str(self.spiffe_id())

    @classmethod
    def from_spiffe_id(cls, sid: SpiffeId) -> SessionIdentity:
        """Read a session identity from a SPIFFE ID whose path is exactly /session/<sid>/<role>."""
        parts = sid.path.split("/")
        if len(parts) != 4 or parts[1] != "session":
            raise SpiffeIdError(f"path {sid.path!r} is not /session/<sid>/<role>")
        return cls(sid.trust_domain, validate_session_id(parts[2]), validate_role(parts[3]))
