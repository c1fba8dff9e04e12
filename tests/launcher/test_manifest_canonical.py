"""Properties of the canonical form: idempotent, blind to spelling, sensitive to every value."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from manifests.jcs_oracle import oracle_canonical
from manifests.samples import FULL, encode

from launcher.manifest import MAX_SAFE_INTEGER, ManifestError, canonical_bytes, load_manifest, parse_strict

SAFE_INT = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
# Text that includes controls, quotes, backslashes, non-ASCII and astral characters (never lone surrogates).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=8) | st.sampled_from(
    ["", '"', "\\", "/", "\x00", "\x7f", "\ufb01", "\U0001F600", "\U00010000", "\ue000"])
SCALARS = st.none() | st.booleans() | SAFE_INT | TEXT
DOCUMENTS = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=24
)
SEEDS = st.integers(min_value=0, max_value=2**32)
WHITESPACE = ["", " ", "\t", "\n", "\r\n", "  \t"]


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


def _spell_char(char: str, rnd: random.Random) -> str:
    if char in '"\\' or ord(char) < 0x20:
        return json.dumps(char)[1:-1] if rnd.random() < 0.5 else f"\\u{ord(char):04x}"
    if rnd.random() < 0.7:
        return "\\/" if char == "/" and rnd.random() < 0.5 else char
    units = char.encode("utf-16-be")
    code = "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04{rnd.choice('xX')}}" for i in range(0, len(units), 2))
    return code


def respell(value: Any, rnd: random.Random) -> str:
    """The same document written another way: member order, whitespace and escapes chosen at random."""
    gap = rnd.choice(WHITESPACE)
    if isinstance(value, dict):
        keys = list(value)
        rnd.shuffle(keys)
        members = [f"{gap}{respell(key, rnd)}{rnd.choice(WHITESPACE)}:{gap}{respell(value[key], rnd)}" for key in keys]
        return "{" + ",".join(members) + gap + "}"
    if isinstance(value, list):
        return "[" + ",".join(gap + respell(item, rnd) for item in value) + gap + "]"
    if isinstance(value, str):
        return '"' + "".join(_spell_char(char, rnd) for char in value) + '"'
    return json.dumps(value)


@settings(max_examples=200)
@given(DOCUMENTS)
def test_canonicalisation_is_idempotent(document: Any) -> None:
    assume(_depth(document) <= 30)
    once = canonical_bytes(parse_strict(json.dumps(document).encode()))
    assert canonical_bytes(parse_strict(once)) == once


@settings(max_examples=200)
@given(DOCUMENTS, SEEDS)
def test_spelling_never_changes_the_canonical_bytes(document: Any, seed: int) -> None:
    assume(_depth(document) <= 30)
    spelled = respell(document, random.Random(seed))
    canonical = canonical_bytes(parse_strict(spelled.encode("utf-8")))
    assert canonical == canonical_bytes(document) == oracle_canonical(document)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*path, index))]
    return [path]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value < MAX_SAFE_INTEGER else value - 1
    if isinstance(value, str):
        return value + "x"
    return 0


def _set(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


@settings(max_examples=200)
@given(DOCUMENTS, st.data())
def test_changing_any_value_changes_the_canonical_bytes(document: Any, data: st.DataObject) -> None:
    assume(_depth(document) <= 30 and isinstance(document, dict | list))
    leaves = [leaf for leaf in _leaves(document) if leaf]
    assume(leaves)
    path = data.draw(st.sampled_from(leaves))
    target = document
    for key in path:
        target = target[key]
    assert canonical_bytes(_set(document, path, _changed(target))) != canonical_bytes(document)


@settings(max_examples=200)
@given(st.sampled_from(_leaves(FULL)), SEEDS)
def test_changing_any_manifest_value_changes_the_hash_or_is_refused(path: tuple[Any, ...], seed: int) -> None:
    original = load_manifest(encode(FULL))
    target: Any = FULL
    for key in path:
        target = target[key]
    changed = _set(FULL, path, _changed(target))
    try:
        manifest = load_manifest(encode(changed))
    except ManifestError:
        return  # a change the loader refuses can never be approved under the old hash either
    assert manifest.sha256 != original.sha256
    assert load_manifest(respell(changed, random.Random(seed)).encode()).sha256 == manifest.sha256


@settings(max_examples=100)
@given(SEEDS)
def test_the_manifest_hash_is_blind_to_spelling(seed: int) -> None:
    assert load_manifest(respell(FULL, random.Random(seed)).encode()).sha256 == load_manifest(encode(FULL)).sha256
