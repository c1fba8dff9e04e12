"""app.env: settings the app starts with, never a secret nor a variable the launcher sets; app.home_seed's path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from manifests.samples import DROP, load, sample

from launcher.manifest import ManifestError
from launcher.policy.environment import app_env
from launcher.policy.layout import PLAN_PATHS


@pytest.mark.parametrize("env", [
    {"TERM": "xterm-256color", "ANTHROPIC_MODEL": "claude-sonnet-4-5"},
    {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "PATH": "/opt/agent/bin:/usr/bin:/bin"},
    {"TOKENIZERS_PARALLELISM": "false"},  # "tokenizers" is no secret word: only whole segments are
    {},
])
def test_settings_load_in_the_manifests_order(env: dict[str, str]) -> None:
    manifest = load(sample(app__env=env))
    assert manifest.app.env == tuple(env.items())
    assert all(app_env(manifest, PLAN_PATHS, "/usr")[name] == value for name, value in env.items())


@pytest.mark.parametrize(("name", "value", "words"), [
    ("HOME", "/root", "the launcher sets HOME"),
    ("TMPDIR", "/tmp", "the launcher sets TMPDIR"),
    ("XDG_CONFIG_HOME", "/etc", "the launcher sets"),
    ("SHARNESS_DOOR_FS", "/tmp/evil.sock", "the launcher sets"),
    ("HTTPS_PROXY", "http://evil:3128", "the launcher sets"),
    ("https_proxy", "http://evil:3128", "the launcher sets"),
    ("NO_PROXY", "*", "the launcher sets"),
    ("ANTHROPIC_BASE_URL", "https://api.anthropic.com", "the launcher sets"),
    ("ANTHROPIC_API_KEY", "x", "the launcher sets"),
    ("GITHUB_TOKEN", "x", "named like a secret"),
    ("OPENAI_API_KEY", "x", "named like a secret"),
    ("DB_PASSWORD", "x", "named like a secret"),
    ("MODEL", "sk-ant-api03-" + "a" * 40, "looks like a secret (anthropic)"),
    ("NOTE", "ghp_" + "A" * 36, "looks like a secret (github)"),
    ("URL", "https://user:hunter2@example.com/", "looks like a secret (url_password)"),
    ("KEYFILE", "-----BEGIN PRIVATE KEY-----MIIE", "looks like a secret (pem)"),
])
def test_a_secret_or_a_launcher_variable_is_refused_naming_the_row(name: str, value: str, words: str) -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(app__env={"TERM": "dumb", name: value}))
    assert refused.value.pointer == f"/app/env/{name}"
    assert words in refused.value.message and refused.value.hint
    assert value not in str(refused.value) or len(value) < 8  # a refusal never repeats the secret


@pytest.mark.parametrize(("env", "pointer"), [
    ({"1TERM": "x"}, "/app/env/1TERM"),
    ({"A-B": "x"}, "/app/env/A-B"),
    ({"TERM": 1}, "/app/env/TERM"),
    ({"TERM": "x" * 4097}, "/app/env/TERM"),
])
def test_the_schema_refuses_what_is_no_variable(env: dict[str, object], pointer: str) -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(app__env=env))
    assert refused.value.pointer == pointer


@pytest.mark.parametrize(("seed", "pointer"), [
    ("relative/seed", "/app/home_seed"),
    ("/proc/self", "/app/home_seed"),
    ("/run/sharness/x", "/app/home_seed"),
])
def test_a_home_seed_path_is_refused_as_written(seed: str, pointer: str) -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(app__home_seed=seed))
    assert refused.value.pointer == pointer


def test_a_secret_source_inside_the_home_seed_is_refused() -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(app__home_seed="/etc/sharness"))
    assert refused.value.pointer == "/doors/keys/secrets/anthropic/from"


def test_the_plan_lists_env_seed_and_children() -> None:
    from launcher.commands.check import NO_KERNEL
    from launcher.policy.plan import build_plan

    plan = build_plan(load(sample(app__env={"TERM": "dumb"}, app__home_seed="/opt/agent-home")), NO_KERNEL)
    rows = {row.row_id: row for row in plan.rows if row.component == "app"}
    assert "TERM" in rows["env"].meaning and rows["env"].kind == "Setting"
    assert "/opt/agent-home" in rows["home_seed"].meaning
    assert "inherits every row" in rows["children"].meaning


def test_check_refuses_a_secret_in_app_env_with_65(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from launcher import cli

    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(sample(app__env={"ANTHROPIC_MODEL": "sk-ant-api03-" + "x" * 40})))
    assert cli.main(["check", "--json", str(path)]) == 65
    refusal = json.loads(capsys.readouterr().out)
    assert refusal["pointer"] == "/app/env/ANTHROPIC_MODEL" and "x" * 40 not in json.dumps(refusal)


@pytest.mark.parametrize(("rows", "starts_in"), [
    ({"app__cwd": "workspace", "app__workspace": "mount"}, "workspace"),
    ({"app__cwd": "workspace", "app__files": {"read": ["/srv/sh-test"]}, "doors__fs__hidden": DROP}, "workspace"),
    ({"app__cwd": "workspace", "app__files": {"read": ["/srv/sh-test/ws"]}, "doors__fs__hidden": DROP}, "workspace"),
    ({"app__cwd": "private", "app__workspace": "mount"}, "private"),
    ({"app__workspace": "mount"}, "private"),
])
def test_app_cwd_loads(rows: dict[str, object], starts_in: str) -> None:
    assert load(sample(**rows)).app.cwd == starts_in


@pytest.mark.parametrize("rows", [
    {"app__cwd": "workspace", "app__workspace": "api"},
    {"app__cwd": "workspace", "app__workspace": DROP, "app__files": {"read": ["/srv/other"]}},
    {"app__cwd": "workspace", "app__workspace": DROP, "app__files": {"read": ["/srv/sr"]}},  # a prefix, no parent
])
def test_app_cwd_workspace_needs_the_workspace_visible(rows: dict[str, object]) -> None:
    document = sample(**rows)
    document["workspace"] = "/srv/src"
    with pytest.raises(ManifestError) as refused:
        load(document)
    assert refused.value.pointer == "/app/cwd" and "cannot see" in refused.value.message


def test_app_cwd_is_one_of_two_words() -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(app__cwd="/tmp"))
    assert refused.value.pointer == "/app/cwd"


def test_app_bind_tcp_loads_and_a_doors_port_is_refused() -> None:
    manifest = load(sample(app__bind_tcp=[8000, 8001]))
    assert manifest.app.bind_tcp == (8000, 8001)
    for port in (3128, 3129):
        with pytest.raises(ManifestError) as refused:
            load(sample(app__bind_tcp=[8000, port]))
        assert refused.value.pointer == "/app/bind_tcp/1" and "door's listener" in refused.value.message
    for bad in ([80], [8000, 8000], [70000]):
        with pytest.raises(ManifestError):
            load(sample(app__bind_tcp=bad))
