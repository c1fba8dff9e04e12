"""manifests/schema.json is a valid 2020-12 schema, closed everywhere, and its errors carry pointers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from manifests.samples import DROP, load, sample

from launcher.manifest import ManifestError
from launcher.manifest._schema import SCHEMA_PATH, schema

REPO = Path(__file__).resolve().parents[2]


def _object_schemas(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append(node)
        for value in node.values():
            found.extend(_object_schemas(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_object_schemas(value))
    return found


def test_schema_is_valid_2020_12_and_is_the_one_in_manifests() -> None:
    Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert os.path.realpath(SCHEMA_PATH) == str(REPO / "manifests" / "schema.json")


def test_every_object_is_closed() -> None:
    objects = _object_schemas(schema())
    assert len(objects) >= 10
    for node in objects:
        closed = node.get("additionalProperties") is False or "propertyNames" in node
        assert closed, node


@pytest.mark.parametrize(
    ("changes", "pointer", "words"),
    [
        ({"colour": "blue"}, "/colour", "unknown key"),
        ({"app__files__write": ["/tmp"]}, "/app/files/write", "unknown key"),
        ({"doors__fs__writable": ["src"]}, "/doors/fs/writable", "unknown key"),
        ({"doors__printer": {}}, "/doors/printer", "unknown key"),
        ({"session__ttl_s": True}, "/session/ttl_s", "boolean"),
        ({"app__process__max_pids": False}, "/app/process/max_pids", "boolean"),
        ({"doors__fs__max_files": True}, "/doors/fs/max_files", "boolean"),
        ({"doors__fs__max_concurrent_uploads": 0}, "/doors/fs/max_concurrent_uploads", "below the minimum 1"),
        ({"doors__fs__max_concurrent_uploads": 1025}, "/doors/fs/max_concurrent_uploads", "above the maximum"),
        ({"doors__model__budget_microusd": True}, "/doors/model/budget_microusd", "boolean"),
        ({"doors__fs__refuse_secrets": 1}, "/doors/fs/refuse_secrets", "expected true or false"),
        ({"session__ttl_s": "600"}, "/session/ttl_s", "expected an integer"),
        ({"session__ttl_s": 59}, "/session/ttl_s", "below the minimum 60"),
        ({"session__ttl_s": 86401}, "/session/ttl_s", "above the maximum 86400"),
        ({"sharness": "manifest/v1"}, "/sharness", "is not"),
        ({"sharness": DROP}, "/sharness", "required"),
        ({"session__trust_domain": DROP}, "/session/trust_domain", "required"),
        ({"app__argv": []}, "/app/argv", "at least 1"),
        ({"session__name": "Has Space"}, "/session/name", "expected form"),
        ({"doors__net__allow": {"fs": []}}, "/doors/net/allow/fs", "not allowed"),
        ({"doors__keys__secrets": {"Bad Name": {}}}, "/doors/keys/secrets/Bad Name", "not allowed"),
        ({"doors__shell__workspace": "write"}, "/doors/shell/workspace", "not one of"),
        ({"doors__fs__read_only": [".git", ".git"]}, "/doors/fs/read_only", "twice"),
        ({"doors__fs__max_file_bytes": DROP}, "/doors/fs/max_file_bytes", "required"),
        ({"edges": [["app"]]}, "/edges/0", "at least 2"),
        ({"edges": [["app", "printer"]]}, "/edges/0/1", "not one of"),
        ({"doors__model__upstream": "http://api.anthropic.com"}, "/doors/model/upstream", "expected form"),
    ],
)
def test_schema_refusals_name_the_pointer(changes: dict[str, Any], pointer: str, words: str) -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(**changes))
    assert refused.value.pointer == pointer
    assert words in refused.value.message
    assert refused.value.hint
