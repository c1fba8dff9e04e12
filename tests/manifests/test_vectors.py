"""Every vector in manifests/vectors: accepted inputs give their canonical bytes and hash; refusals their pointer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from launcher.manifest import ManifestError, canonical_bytes, load_manifest, parse_strict

from .jcs_oracle import oracle_canonical

VECTORS = Path(__file__).resolve().parents[2] / "manifests" / "vectors"
INDEX: list[dict[str, Any]] = json.loads((VECTORS / "index.json").read_text(encoding="utf-8"))["vectors"]
ACCEPTED = [vector for vector in INDEX if vector["kind"] in ("jcs", "manifest")]
REFUSED = [vector for vector in INDEX if vector["kind"] == "refuse"]


def _ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [vector["name"] for vector in vectors]


def test_the_set_is_large_and_covers_what_the_issue_names() -> None:
    names = " ".join(vector["name"] for vector in INDEX)
    assert len(INDEX) >= 30 and len(ACCEPTED) >= 20 and len(REFUSED) >= 30
    for topic in ("astral", "utf16", "escape", "large-integers", "empty-containers", "whitespace", "key-order"):
        assert topic in names, topic
    assert sum("verified" in vector for vector in ACCEPTED) >= 10


def test_every_file_in_the_directory_is_indexed() -> None:
    named = {vector["input"] for vector in INDEX} | {vector["canonical"] for vector in ACCEPTED} | {"index.json"}
    assert {path.name for path in VECTORS.iterdir()} == named


@pytest.mark.parametrize("vector", ACCEPTED, ids=_ids(ACCEPTED))
def test_accepted_vector(vector: dict[str, Any]) -> None:
    raw = (VECTORS / vector["input"]).read_bytes()
    expected = (VECTORS / vector["canonical"]).read_bytes()
    if vector["kind"] == "manifest":
        manifest = load_manifest(raw)
        canonical, digest = manifest.canonical, manifest.sha256
    else:
        canonical = canonical_bytes(parse_strict(raw))
        digest = "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert canonical == expected
    assert digest == vector["sha256"] == "sha256:" + hashlib.sha256(expected).hexdigest()


@pytest.mark.parametrize("vector", ACCEPTED, ids=_ids(ACCEPTED))
def test_accepted_vector_agrees_with_an_independent_serialiser(vector: dict[str, Any]) -> None:
    expected = (VECTORS / vector["canonical"]).read_bytes()
    assert oracle_canonical(json.loads(expected)) == expected


@pytest.mark.parametrize("vector", REFUSED, ids=_ids(REFUSED))
def test_refusal_vector(vector: dict[str, Any]) -> None:
    raw = (VECTORS / vector["input"]).read_bytes()
    with pytest.raises(ManifestError) as refused:
        load_manifest(raw)
    assert vector["exit"] == 65
    assert refused.value.pointer == vector["pointer"]
    assert refused.value.hint


def test_utf16_order_vector_disagrees_with_python_sort() -> None:
    document = parse_strict((VECTORS / "jcs-utf16-order-disagrees.in").read_bytes())
    python_order = sorted(document)
    canonical_order = list(json.loads(canonical_bytes(document)))
    assert python_order != canonical_order
    assert canonical_order == ["\U0001f600", "\ufb01"]


def test_reordered_demo_has_the_demo_hash() -> None:
    by_name = {vector["name"]: vector for vector in INDEX}
    assert by_name["manifest-demo"]["sha256"] == by_name["manifest-demo-reordered"]["sha256"]
    assert by_name["manifest-empty-edges"]["sha256"] != by_name["manifest-default-edges"]["sha256"]
