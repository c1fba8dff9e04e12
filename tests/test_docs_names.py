"""What the README and the guides name must exist: each test file and test they cite as the one that shows a
claim, each bench module, and each figure key the README's table reads from bench/results/latest.json.

A claim whose test was renamed or removed reads as shown when nothing shows it any more; a key the bench no
longer writes leaves its row describing a figure that was not measured. docs/decisions/ is a record of what
was tried and may name what is gone (it says so where it does), so it is not read here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _tree import ROOT

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "doors").glob("*/README.md")))
CITED_TEST = re.compile(r"\b(tests/[\w/]+\.py)(?:::(\w+))?")
CITED_BENCH = re.compile(r"\b(bench/[\w/]+\.py)\b")
# The README's figures table: its first cell names the row's keys in backticks, after the words.
FIGURE_KEY = re.compile(r"`([a-z][a-z0-9_]*)`")


def _cited(pattern: re.Pattern[str]) -> list[tuple[str, str, str]]:
    found = []
    for doc in DOCS:
        for match in pattern.finditer(doc.read_text()):
            name = match.group(2) if pattern.groups > 1 else None
            found.append((doc.relative_to(ROOT).as_posix(), match.group(1), name or ""))
    return found


def _defines(path: Path, name: str) -> bool:
    return re.search(rf"^\s*(?:async )?def {re.escape(name)}\b|^class {re.escape(name)}\b", path.read_text(),
                     re.MULTILINE) is not None


@pytest.mark.parametrize(("doc", "path", "name"), _cited(CITED_TEST))
def test_each_cited_test_exists(doc: str, path: str, name: str) -> None:
    file = ROOT / path
    assert file.is_file(), f"{doc} cites {path}, which does not exist"
    if name:
        assert _defines(file, name), f"{doc} cites {path}::{name}, which {path} does not define"


@pytest.mark.parametrize(("doc", "path"), [(doc, path) for doc, path, _ in _cited(CITED_BENCH)])
def test_each_cited_bench_module_exists(doc: str, path: str) -> None:
    assert (ROOT / path).is_file(), f"{doc} cites {path}, which does not exist"


def _figure_keys() -> list[str]:
    section = (ROOT / "README.md").read_text().partition("\n## Figures\n")[2].partition("\n## ")[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [key for cell in rows[1:] for key in FIGURE_KEY.findall(cell)]  # rows[0] is the header


def test_the_readme_figures_table_names_keys() -> None:
    assert len(_figure_keys()) >= 20  # the row pattern still finds the table (the next test is not vacuous)


@pytest.mark.parametrize("key", _figure_keys())
def test_each_readme_figure_is_in_the_last_run(key: str) -> None:
    latest = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    assert key in latest, f"README.md's figures table reads {key}, which bench/results/latest.json does not hold"
