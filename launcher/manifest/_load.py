"""Bytes in, a checked Manifest out: strict JSON, readable strings, schema, cross checks, canonical bytes, hash.
Pure."""

from __future__ import annotations

from launcher.manifest._canonical import canonical_bytes, hash_of
from launcher.manifest._checks import check_document
from launcher.manifest._errors import ManifestError
from launcher.manifest._model import Manifest, build_manifest
from launcher.manifest._schema import validate
from launcher.manifest._strict_json import parse_strict
from launcher.manifest._text import check_strings


def load_manifest(raw: bytes) -> Manifest:
    """Parse, validate and check manifest bytes; raise ManifestError (with a JSON pointer) on refusal."""
    document = parse_strict(raw)
    check_strings(document)
    validate(document)
    if not isinstance(document, dict):  # the schema already requires an object; this narrows the type
        raise ManifestError("", "the manifest is not a JSON object", "write a JSON object")
    check_document(document)
    canonical = canonical_bytes(document)
    return build_manifest(document, canonical, hash_of(canonical))
