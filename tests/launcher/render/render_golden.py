"""Golden files of renders: tests/launcher/render/golden/<target>/<manifest>/<file>. SHARNESS_REGOLD=1 rewrites them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from launcher.render.rendering import Rendering

GOLDEN = Path(__file__).resolve().parent / "golden"


def _expected(rendering: Rendering) -> dict[str, str]:
    # The seccomp profiles are held to the launcher's filter rule by rule (test_kubernetes.py), not to a copy.
    files = {name: text for name, text in rendering.files if not name.startswith("seccomp/")}
    files["matrix.json"] = json.dumps(rendering.as_dict(), indent=2, ensure_ascii=False) + "\n"
    return files


def assert_golden(target: str, name: str, rendering: Rendering) -> None:
    """The rendering's files and matrix are the golden ones (rewritten instead when SHARNESS_REGOLD=1)."""
    where = GOLDEN / target / name
    expected = _expected(rendering)
    if os.environ.get("SHARNESS_REGOLD") == "1":
        for file, text in expected.items():
            (where / file).parent.mkdir(parents=True, exist_ok=True)
            (where / file).write_text(text)
    on_disk = {str(path.relative_to(where)): path.read_text() for path in where.rglob("*") if path.is_file()}
    assert on_disk.keys() == expected.keys(), f"golden files of {target}/{name} differ: rerun with SHARNESS_REGOLD=1"
    for file, text in expected.items():
        assert on_disk[file] == text, f"{target}/{name}/{file} differs from its golden file"
