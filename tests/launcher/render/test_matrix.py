"""The matrix: one row enumeration with `check` (the plan's), every row a line in each target's table, in the
barrier words `check` uses, and no table line that no row reaches."""

from __future__ import annotations

import dataclasses

import pytest
from render_cases import COVERING, EXAMPLES, FIXED, example

from launcher.kernel.probe_facts import KernelFacts
from launcher.policy.plan import build_plan
from launcher.render import TARGETS, bwrap, docker, docker_holds, kubernetes, kubernetes_holds, render
from launcher.render.matrix import NO_LINE, Hold, matrix_of
from pki.vocabulary import BARRIER_KINDS, SETTING, UNHELD

TABLES = {"kubernetes": kubernetes_holds.HOLDS, "bwrap": bwrap.HOLDS, "docker": docker_holds.HOLDS}
FULL_KERNEL = KernelFacts(landlock_abi=7, netns=True, seccomp_filter=True, openat2=True, cgroup_memory="/m",
                          cgroup_pids="/p", is_root=True)
MANIFESTS = {**COVERING, **{name: example(name) for name in EXAMPLES}}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_the_matrix_is_the_plans_rows_in_order(target: str, name: str) -> None:
    manifest = MANIFESTS[name]
    plan = build_plan(manifest, FULL_KERNEL, FIXED.python)
    matrix = render(manifest, target, FIXED).matrix
    assert [(line.component, line.row_id, line.meaning, line.launcher_kind) for line in matrix] == \
        [(row.component, row.row_id, row.meaning, row.kind) for row in plan.rows]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_every_row_has_a_line_in_checks_words(target: str, name: str) -> None:
    for line in render(MANIFESTS[name], target, FIXED).matrix:
        assert line.mechanism != NO_LINE, f"{target} has no line for {line.component}:{line.row_id}"
        assert line.kind in (*BARRIER_KINDS, UNHELD)
        assert line.held == (line.kind != UNHELD)


def _key_used(table: dict[str, object], component: str, row_id: str) -> str:
    for key in (f"{component}:{row_id}", row_id, f"{component}:*"):
        if key in table:
            return key
    raise AssertionError(f"no line for {component}:{row_id}")


@pytest.mark.parametrize("target", TARGETS)
def test_no_table_line_is_left_over(target: str) -> None:
    """Every line of a target's table is reached by some row of the covering manifests or the bundled examples:
    none outlives its row."""
    table = dict(TABLES[target])
    used = {_key_used(table, line.component, line.row_id) for manifest in MANIFESTS.values()
            for line in render(manifest, target, FIXED).matrix}
    assert set(table) - used == set()


def test_a_row_a_table_lacks_is_unheld_and_says_so() -> None:
    manifest = COVERING["every-row"]
    plan = build_plan(manifest, FULL_KERNEL, FIXED.python)
    lines = matrix_of(manifest, plan, {"memory": Hold(SETTING, "planted")})
    assert {line.mechanism for line in lines if line.row_id != "memory"} == {NO_LINE}
    assert not any(line.held for line in lines if line.row_id != "memory")
    assert all(line.kind == SETTING for line in lines if line.row_id == "memory")


def test_runtime_default_takes_the_launchers_filter_away_in_the_matrix() -> None:
    manifest = COVERING["every-row"]
    localhost = {(line.component, line.row_id): line for line in render(manifest, "kubernetes", FIXED).matrix}
    default = render(manifest, "kubernetes", dataclasses.replace(FIXED, seccomp_default=True))
    flipped = {(line.component, line.row_id) for line in default.matrix
               if localhost[(line.component, line.row_id)].held and not line.held}
    assert {row for _, row in flipped} >= {"seccomp", "netns"}
    assert not [name for name, _ in default.files if name.startswith("seccomp/")]


@pytest.mark.parametrize("target", TARGETS)
def test_each_target_holds_something_and_not_everything(target: str) -> None:
    matrix = render(COVERING["every-row"], target, FIXED).matrix
    assert 0 < sum(line.held for line in matrix) < len(matrix)


def test_each_target_is_its_module() -> None:
    assert (kubernetes.TARGET, bwrap.TARGET, docker.TARGET) == TARGETS


def test_the_cli_does_not_pay_for_the_renderers_until_it_renders() -> None:
    """`render` is registered with every CLI start; its modules load only when it runs."""
    import subprocess
    import sys

    code = ("import sys; from launcher.cli import build_parser; build_parser(); "
            "print(' '.join(m for m in sys.modules if m.startswith('launcher.render.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == []
