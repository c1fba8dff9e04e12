"""The manifest: strict loading, schema and cross checks, RFC 8785 canonical bytes, sha256. Pure."""

from launcher.manifest._canonical import HASH_PREFIX, canonical_bytes, hash_of
from launcher.manifest._errors import ManifestError, pointer
from launcher.manifest._load import load_manifest
from launcher.manifest._model import (
    DOOR_DEFAULT_LIMITS,
    FS_DEFAULT_MAX_CONCURRENT_UPLOADS,
    SCRATCH_INODES_PER_MB,
    SCRATCH_MEMORY_SHARE,
    SHELL_DEFAULT_LIMITS,
    App,
    Manifest,
    Session,
)
from launcher.manifest._strict_json import MAX_BYTES, MAX_DEPTH, MAX_SAFE_INTEGER, parse_strict

__all__ = [
    "DOOR_DEFAULT_LIMITS",
    "FS_DEFAULT_MAX_CONCURRENT_UPLOADS",
    "HASH_PREFIX",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "SCRATCH_INODES_PER_MB",
    "SCRATCH_MEMORY_SHARE",
    "SHELL_DEFAULT_LIMITS",
    "App",
    "Manifest",
    "ManifestError",
    "Session",
    "canonical_bytes",
    "hash_of",
    "load_manifest",
    "parse_strict",
    "pointer",
]
