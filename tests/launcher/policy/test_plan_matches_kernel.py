"""The plan a person approves and the rules the kernel is given come from one manifest and cannot drift: every
path and port the kernel grants is in the plan (and in its text), and every path the plan shows is granted."""

from __future__ import annotations

import pytest
from manifest_shapes import CASES, SHAPES

from launcher.kernel.probe_facts import FULL_KERNEL
from launcher.lifecycle.create import Resources
from launcher.lifecycle.session import Session
from launcher.manifest import Manifest
from launcher.policy.confine_plan import covers
from launcher.policy.layout import PLAN_PATHS
from launcher.policy.plan import ComponentPlan, Plan, build_plan
from launcher.policy.plan_render import render_plan
from pki.vocabulary import DOOR_ORDER, ROLES

RESOURCES = Resources(uids={role: 61000 + index for index, role in enumerate(ROLES)},
                      gids={role: 61000 + index for index, role in enumerate(ROLES)},
                      door_gids={door: 62000 + index for index, door in enumerate(DOOR_ORDER)})


def _kernel(manifest: Manifest, role: str) -> dict[str, object]:
    """What the session hands the kernel for `role` (Landlock and seccomp), its session id shown as <sid>."""
    session = Session(manifest, FULL_KERNEL)
    spec = session.spec(role, RESOURCES, {}, ())
    assert spec.landlock is not None
    runtime = session.layout.runtime_dir

    def as_planned(path: str) -> str:
        inside = path == runtime or path.startswith(f"{runtime}/")
        return PLAN_PATHS.runtime_dir + path[len(runtime):] if inside else path

    rules = spec.landlock
    return {"read": tuple(map(as_planned, rules.read)), "write": tuple(map(as_planned, rules.write)),
            "exec": tuple(map(as_planned, rules.exec)), "tcp_connect": set(rules.tcp_connect),
            "udp": spec.seccomp_allow_udp}


def _component(plan: Plan, role: str) -> ComponentPlan:
    return next(component for component in plan.components if component.role == role)


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_every_path_the_kernel_grants_is_in_the_plan_and_back(shape: str, role: str) -> None:
    manifest = SHAPES[shape]
    kernel = _kernel(manifest, role)
    component = _component(build_plan(manifest, FULL_KERNEL), role)
    for right, shown in (("read", component.reads), ("write", component.writes), ("exec", component.executes)):
        granted = kernel[right]
        assert isinstance(granted, tuple)
        missing = set(granted) - set(shown)
        assert not missing, f"{role} may {right} {sorted(missing)} but the plan does not say so"
        unfounded = [path for path in shown if not covers(granted, path)]
        assert not unfounded, f"the plan says {role} may {right} {unfounded} but the kernel is not given it"
    assert kernel["tcp_connect"] == set(component.tcp_connect)
    assert kernel["udp"] == component.udp


def _text_items(text: str, role: str, label: str) -> list[str]:
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(f"{role}: memory"))
    line = next(line for line in lines[start + 1:] if line.startswith(f"  {label:<12} "))
    value = line[len(f"  {label:<12} "):]
    return [] if value == "-" else value.split(", ")


@pytest.mark.parametrize(("shape", "role"), CASES)
def test_the_text_a_person_reads_shows_every_path(shape: str, role: str) -> None:
    plan = build_plan(SHAPES[shape], FULL_KERNEL)
    text = render_plan(plan)
    groups = dict(plan.path_groups)
    for label, group in plan.path_groups:
        assert f"  {label:<12} {', '.join(group)}" in text  # each named list is spelled out once
    component = _component(plan, role)
    for label, paths in (("reads", component.reads), ("writes", component.writes),
                         ("executes", component.executes)):
        items = _text_items(text, role, label)
        expanded = {path for item in items for path in groups.get(item, (item,))}
        assert expanded == set(paths), (role, label)


def test_a_secret_the_keys_door_cannot_read_is_not_shown_as_read() -> None:
    inside = _component(build_plan(SHAPES["full"], FULL_KERNEL), "keys")
    outside = _component(build_plan(SHAPES["secret outside /etc"], FULL_KERNEL), "keys")
    assert "/etc/sharness/secrets/anthropic" in inside.reads
    assert "/srv/secrets/anthropic" not in outside.reads
