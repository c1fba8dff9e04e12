"""The two validators of manifests/schema.json agree: jsonschema-rs, which decides every manifest, and jsonschema,
which words a refusal (launcher/manifest/_schema.py). Run on every vector and on mutations of every example;
where only the compiled one refuses, the refusal stands."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from manifests.samples import FULL

from launcher.manifest import ManifestError, parse_strict
from launcher.manifest._schema import _deciding_validator, _validator, validate

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "manifests" / "vectors"
EXAMPLES = [*sorted((REPO / "manifests" / "examples").glob("*.json")), REPO / "manifests" / "demo.json"]
# What each node is replaced by: every JSON kind, the edges of the schema's ranges and forms.
REPLACEMENTS: tuple[Any, ...] = (True, 0, -1, 1 << 53, "", "x" * 300, "A B", "a", [], [1, 1], {}, None)


def _verdicts(document: Any) -> tuple[bool, bool]:
    """(compiled accepts, Python accepts)."""
    return _deciding_validator().is_valid(document), _validator().is_valid(document)


def _documents() -> list[tuple[str, Any]]:
    found = [("samples.FULL", FULL)]
    found += [(path.name, json.loads(path.read_text(encoding="utf-8"))) for path in EXAMPLES]
    return found


def _paths(node: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*at, index))


def _mutants(document: Any) -> Iterator[Any]:
    """The document with one node replaced, removed, or (an object) given an unknown member."""
    for path in _paths(document):
        if not path:
            continue
        for replacement in (*REPLACEMENTS, "drop", "extra"):
            mutant = copy.deepcopy(document)
            parent = mutant
            for token in path[:-1]:
                parent = parent[token]
            if replacement == "drop":
                del parent[path[-1]]
            elif replacement == "extra":
                if not isinstance(parent[path[-1]], dict):
                    continue
                parent[path[-1]]["unknown_member"] = 1
            else:
                parent[path[-1]] = replacement
            yield mutant


def test_they_agree_on_every_vector_that_reaches_the_schema() -> None:
    index = json.loads((VECTORS / "index.json").read_text(encoding="utf-8"))["vectors"]
    compared = 0
    for vector in index:
        try:
            document = parse_strict((VECTORS / vector["input"]).read_bytes())
        except ManifestError:
            continue
        compiled, python = _verdicts(document)
        assert compiled == python, vector["name"]
        compared += 1
    assert compared >= 60


@pytest.mark.parametrize(("name", "document"), _documents(), ids=[name for name, _ in _documents()])
def test_they_agree_on_every_mutation_of_an_example(name: str, document: Any) -> None:
    assert _verdicts(document) == (True, True), name
    refused = 0
    for mutant in _mutants(document):
        compiled, python = _verdicts(mutant)
        assert compiled == python, json.dumps(mutant)[:2000]
        refused += not compiled
    assert refused >= 100


def test_a_refusal_only_the_compiled_validator_makes_stands() -> None:
    # Python's re lets `$` match before a final newline; the schema's patterns mean the end of the string.
    # (check_strings refuses the newline before the schema runs: this calls the schema step alone.)
    document = copy.deepcopy(FULL)
    document["session"]["name"] = "t\n"
    assert _verdicts(document) == (False, True)
    with pytest.raises(ManifestError) as refused:
        validate(document)
    assert refused.value.pointer == "/session/name"
    assert "does not match" in refused.value.message


def test_an_accepted_manifest_imports_no_jsonschema_and_a_refused_one_does() -> None:
    code = ("import sys, json; from launcher.manifest import load_manifest; from manifests.samples import FULL, encode;"
            "load_manifest(encode(FULL)); print('jsonschema' in sys.modules);"
            "bad = json.loads(encode(FULL)); bad['colour'] = 1\n"
            "try: load_manifest(encode(bad))\n"
            "except Exception as e: print(type(e).__name__, 'jsonschema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          cwd=REPO / "tests")
    assert done.stdout.split() == ["False", "ManifestError", "True"]
