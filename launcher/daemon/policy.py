"""sharness-launchd's policy (/etc/sharness/launchd.json): bytes in, a frozen LaunchdPolicy out. Pure.

Strict JSON as the manifest's (no duplicate keys, integers only), its own schema (policy.schema.json), its own
canonical hash (RFC 8785, sha256). User and group names are turned into ids by the resolver the caller passes,
once, at load: a name no account has refuses the policy, rather than quietly matching no one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from launcher.manifest import ManifestError, canonical_bytes, hash_of, parse_strict, pointer

SCHEMA_PATH = Path(__file__).with_name("policy.schema.json")
MAX_POLICY_BYTES = 256 * 1024
DEFAULT_MAX_SESSIONS = 1
DEFAULT_MAX_TTL_S = 28800

# (kind, name) → id, or None when no account has that name; kind is "user" or "group".
Resolver = Callable[[str, str], int | None]


class PolicyError(Exception):
    """The policy cannot be used: where (a JSON pointer into the file), what, and what to change."""

    def __init__(self, pointer: str, message: str, hint: str = "") -> None:
        super().__init__(f"{pointer or '/'}: {message}")
        self.pointer = pointer
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class SecretGrant:
    source: str  # a manifest's doors.keys.secrets.<name>.from: "sealed:NAME" or an absolute path
    hosts: frozenset[str]


@dataclass(frozen=True)
class Principal:
    row: str  # its JSON pointer in the policy, e.g. "/principals/0": what a refusal tells the admin to change
    uid: int | None  # matches a caller with this uid ...
    gid: int | None  # ... or with this gid among its primary and supplementary groups
    max_sessions: int
    max_ttl_s: int
    secrets: tuple[SecretGrant, ...]

    def matches(self, uid: int, gids: frozenset[int]) -> bool:
        return (self.uid is not None and self.uid == uid) or (self.gid is not None and self.gid in gids)

    def grant_for(self, source: str) -> SecretGrant | None:
        return next((grant for grant in self.secrets if grant.source == source), None)


@dataclass(frozen=True)
class LaunchdPolicy:
    sha256: str
    max_sessions: int
    principals: tuple[Principal, ...]

    def principal_for(self, uid: int, gids: frozenset[int]) -> Principal | None:
        """The first principal matching the caller (its uid, or one of its groups), None when none does."""
        return next((principal for principal in self.principals if principal.matches(uid, gids)), None)


@functools.cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def load_policy(raw: bytes, resolve: Resolver) -> LaunchdPolicy:
    """Parse, validate and resolve policy bytes; PolicyError (pointer, message, hint) on refusal."""
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError("", f"the policy is larger than {MAX_POLICY_BYTES} bytes", "write a smaller policy")
    try:
        document = parse_strict(raw)
    except ManifestError as error:
        raise PolicyError(error.pointer, error.message, error.hint) from None
    violation = best_match(_validator().iter_errors(document))
    if violation is not None:
        raise PolicyError(pointer(violation.absolute_path), violation.message,
                          "see launcher/daemon/policy.schema.json for what each row takes")
    principals = tuple(_principal(f"/principals/{index}", row, resolve)
                       for index, row in enumerate(document["principals"]))
    return LaunchdPolicy(hash_of(canonical_bytes(document)), document["limits"]["max_sessions"], principals)


def _principal(row: str, document: dict[str, Any], resolve: Resolver) -> Principal:
    uid, gid = document.get("uid"), document.get("gid")
    for kind, key in (("user", "user"), ("group", "group")):
        name = document.get(key)
        if name is None:
            continue
        found = resolve(kind, name)
        if found is None:
            raise PolicyError(f"{row}/{key}", f"no {kind} is named {name!r} on this machine",
                              f"name an existing {kind}, or give its id as \"{'uid' if kind == 'user' else 'gid'}\"")
        uid, gid = (found, gid) if kind == "user" else (uid, found)
    grants = tuple(SecretGrant(grant["from"], frozenset(grant["hosts"])) for grant in document.get("secrets", ()))
    sources = [grant.source for grant in grants]
    if len(set(sources)) != len(sources):
        raise PolicyError(f"{row}/secrets", "a secret source is granted twice", "grant each source once")
    return Principal(row, uid, gid, document.get("max_sessions", DEFAULT_MAX_SESSIONS),
                     document.get("max_ttl_s", DEFAULT_MAX_TTL_S), grants)
