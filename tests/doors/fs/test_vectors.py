"""Conformance vectors in doors/fs/vectors/: request → expected status and error row, for every row."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).resolve().parents[3] / "doors" / "fs" / "vectors"


def _load() -> list[Any]:
    cases = []
    for file in sorted(VECTORS.glob("*.json")):
        for vector in json.loads(file.read_text()):
            cases.append(pytest.param(vector, id=f"{file.stem}: {vector['name']}"))
    return cases


def _setup(root: str, outside: str, setup: dict[str, Any]) -> None:
    for directory in setup.get("dirs", []):
        os.makedirs(os.path.join(root, directory), exist_ok=True)
    for name, content in setup.get("files", {}).items():
        with open(os.path.join(root, name), "w") as out:
            out.write(content)
    for name, target in setup.get("symlinks", {}).items():
        os.symlink(outside if target == "OUTSIDE" else target, os.path.join(root, name))


def test_every_row_has_vectors() -> None:
    rows = {file.stem for file in VECTORS.glob("*.json")}
    assert {"within_root", "read_only", "append_only", "hidden", "refuse_secrets", "sizes", "version",
            "exec", "path"} <= rows


@pytest.mark.parametrize("vector", _load())
async def test_vector(vector: dict[str, Any], workspace: str, door_factory: Any) -> None:
    outside = tempfile.mkdtemp(prefix="sharness-fs-outside-")
    try:
        with open(os.path.join(outside, "secret"), "w") as out:
            out.write("outside")
        _setup(workspace, outside, vector["setup"])
        door = door_factory(vector["rows"])
        for number, step in enumerate(vector["steps"]):
            request, expect = step["request"], step["expect"]
            headers = tuple(request.get("headers", {}).items())
            response = await door.request(request["method"], request["target"],
                                          request.get("body", "").encode(), headers)
            assert response.status == expect["status"], (number, response.body)
            if "error" in expect:
                assert json.loads(response.body)["error"] == expect["error"], number
        assert os.listdir(outside) == ["secret"]
    finally:
        shutil.rmtree(outside, ignore_errors=True)
