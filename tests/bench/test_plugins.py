"""bench._plugins: absent parts are skipped and named, present parts merge, clashing keys fail."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench._plugins import Collected, merge, run_all

PART = '''
RATIOS = (("{name}_ms", "{name}_base_ms"),)

def run(quick):
    return {{"{name}_ms": 2.0 if quick else 1.0, "{name}_base_ms": 1.0,
            "samples": {{"panel": {{"{name}": [1.0, 2.0]}}}}}}
'''


@pytest.fixture
def parts_package(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    package = "sharness_bench_parts"
    directory = tmp_path / package
    directory.mkdir()
    (directory / "__init__.py").write_text("")
    for name in ("alpha", "beta"):
        (directory / f"{name}.py").write_text(PART.format(name=name))
    sys.path.insert(0, str(tmp_path))
    try:
        yield directory, package
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.startswith(package)]:
            del sys.modules[module]


def test_present_parts_run_and_absent_parts_are_named(parts_package: tuple[Path, str]) -> None:
    directory, package = parts_package
    collected = run_all(True, ("alpha", "missing", "beta"), directory, package)
    assert collected.figures == {"alpha_ms": 2.0, "alpha_base_ms": 1.0, "beta_ms": 2.0, "beta_base_ms": 1.0}
    assert collected.parts["missing"] == "absent"
    assert set(collected.parts["alpha"]) == {"seconds"}
    assert collected.samples == {"panel": {"alpha": [1.0, 2.0], "beta": [1.0, 2.0]}}
    assert collected.ratios == [("alpha_ms", "alpha_base_ms"), ("beta_ms", "beta_base_ms")]


def test_a_failing_part_fails_the_bench(parts_package: tuple[Path, str]) -> None:
    directory, package = parts_package
    (directory / "broken.py").write_text("def run(quick):\n    raise RuntimeError('part broke')\n")
    with pytest.raises(RuntimeError, match="part broke"):
        run_all(False, ("broken",), directory, package)


def test_two_parts_may_not_claim_one_key() -> None:
    collected = Collected()
    merge(collected, "one", {"shared_ms": 1.0}, ())
    with pytest.raises(ValueError, match="shared_ms"):
        merge(collected, "two", {"shared_ms": 2.0}, ())


def test_every_bench_that_runs_a_session_logs_it_under_its_scratch() -> None:
    """A bench leaves nothing in the person's audit root (/var/lib/sharness/sessions, keys): each `run` it starts
    names an --audit-dir (the daemon's, which cannot be sent one, are removed by launchd_bench itself)."""
    bench = Path(__file__).resolve().parents[2] / "bench"
    starts = [path for path in bench.glob("*.py") if '"run", ' in path.read_text()]
    assert starts, "no bench starts a session: this test looks for the wrong words"
    assert [path.name for path in starts if "--audit-dir" not in path.read_text()] == []
