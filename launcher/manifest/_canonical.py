"""Canonical bytes (RFC 8785, JCS) and the manifest hash. Pure."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

HASH_PREFIX = "sha256:"


def canonical_bytes(document: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a parsed document (keys ordered by UTF-16 code units)."""
    return rfc8785.dumps(document)


def hash_of(canonical: bytes) -> str:
    """`sha256:` and the lowercase hex digest of canonical bytes."""
    return HASH_PREFIX + hashlib.sha256(canonical).hexdigest()
