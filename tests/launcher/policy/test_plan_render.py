"""launcher/policy/plan_render.py: the text a person approves shows argv, and every string escaped."""

from __future__ import annotations

import dataclasses

from manifests.samples import FULL, load, sample

from launcher.kernel.probe_facts import FULL_KERNEL
from launcher.policy.plan import build_plan
from launcher.policy.plan_render import render_plan


def test_the_app_argv_is_shown_one_quoted_argument_per_line() -> None:
    plan = build_plan(load(sample(app__argv=["/opt/agent/bin/agent", "--flag", "two words"])), FULL_KERNEL)
    lines = render_plan(plan).splitlines()
    app = lines.index(next(line for line in lines if line.startswith("app: memory")))
    assert lines[app + 1:app + 4] == ['  argv[0]      "/opt/agent/bin/agent"', '  argv[1]      "--flag"',
                                      '  argv[2]      "two words"']
    assert plan.as_dict()["argv"] == ["/opt/agent/bin/agent", "--flag", "two words"]


def test_the_plan_says_where_the_app_starts() -> None:
    default = build_plan(load(sample()), FULL_KERNEL)
    assert "  starts in    /run/sharness/<sid>/app, its private dir" in render_plan(default).splitlines()
    assert default.as_dict()["start_dir"] == "/run/sharness/<sid>/app"
    manifest = load(sample(app__cwd="workspace", app__workspace="mount"))
    in_workspace = build_plan(manifest, FULL_KERNEL)
    assert f"  starts in    {manifest.workspace}, the workspace (app.cwd)" in render_plan(in_workspace).splitlines()
    assert in_workspace.as_dict()["start_dir"] == manifest.workspace


def test_a_script_argument_shows_its_newlines_and_tabs_escaped() -> None:
    plan = build_plan(load(sample(app__argv=["/bin/sh", "-c", "true\n\trm -rf ~"])), FULL_KERNEL)
    assert '  argv[2]      "true\\u{000A}\\u{0009}rm -rf ~"' in render_plan(plan).splitlines()


def test_every_string_is_escaped_whatever_field_carries_it() -> None:
    # The loader refuses these characters; the renderer does not rely on it.
    plan = build_plan(load(FULL), FULL_KERNEL)
    hostile = dataclasses.replace(plan, workspace="/srv/\u202eetc", session="t\x1b[2J", argv=("a\u200b", "\x9b"),
                                  rows=(dataclasses.replace(plan.rows[0], meaning="m\u2028x"), *plan.rows[1:]))
    text = render_plan(hostile)
    for shown in ("workspace /srv/\\u{202E}etc", "session t\\u{001B}[2J", '"a\\u{200B}"', '"\\u{009B}"', "m\\u{2028}x"):
        assert shown in text, shown
    assert all(char.isprintable() for line in text.splitlines() for char in line)


def test_a_plain_plan_is_unchanged_by_escaping() -> None:
    text = render_plan(build_plan(load(FULL), FULL_KERNEL))
    assert "\\u{" not in text and "\\\\" not in text
