"""Each component's environment is built from nothing: the app's names its doors, its identity and, with the
edge to net, the proxy; nothing of the launcher's own environment gets through."""

from __future__ import annotations

import pytest
from manifest_shapes import SHAPES

from launcher.policy.environment import MODEL_KEY_PLACEHOLDER, app_env, door_env
from launcher.policy.layout import SessionLayout
from pki.vocabulary import PROXY_VARIABLES

LAYOUT = SessionLayout("0123abcd")
PRIVATE = "/run/sharness/0123abcd/app"
DOORS = "/run/sharness/0123abcd/doors"
BASE = {
    "PATH": "/opt/py/bin:/usr/local/bin:/usr/bin:/bin",
    "HOME": f"{PRIVATE}/home",
    "TMPDIR": f"{PRIVATE}/tmp",
    "XDG_CONFIG_HOME": f"{PRIVATE}/home/.config",
    "XDG_CACHE_HOME": f"{PRIVATE}/home/.cache",
    "XDG_DATA_HOME": f"{PRIVATE}/home/.local/share",
    "XDG_STATE_HOME": f"{PRIVATE}/home/.local/state",
    "LANG": "C.UTF-8",
    "SHARNESS_SESSION": "0123abcd",
    "SHARNESS_TRUST_DOMAIN": "t.sharness.test",
    "SHARNESS_SVID": f"{PRIVATE}/svid.pem",
    "SHARNESS_BUNDLE": f"{PRIVATE}/bundle.pem",
}
PROXY = dict.fromkeys(PROXY_VARIABLES, "http://127.0.0.1:3128")
# With the edge app→model: the SDKs' variables point at the model door's listener in the app's netns.
MODEL = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:3129", "ANTHROPIC_API_KEY": MODEL_KEY_PLACEHOLDER,
         "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def _doors(*servers: str) -> dict[str, str]:
    return {f"SHARNESS_DOOR_{server.upper()}": f"{DOORS}/{server}.sock" for server in servers}


@pytest.mark.parametrize(("shape", "want"), [
    ("full", {**BASE, **_doors("fs", "model", "net", "shell"), **PROXY, **MODEL}),
    ("no app→net", {**BASE, **_doors("fs", "model", "shell"), **MODEL}),
    ("no shell→net", {**BASE, **_doors("fs", "model", "net", "shell"), **PROXY, **MODEL}),
    ("app only", BASE),
    ("app and fs", {**BASE, **_doors("fs")}),
    ("app and net", {**BASE, **_doors("net"), **PROXY}),
    ("no edges", BASE),
])
def test_the_apps_environment(shape: str, want: dict[str, str]) -> None:
    assert app_env(SHAPES[shape], LAYOUT, "/opt/py") == want


def test_nothing_of_the_launchers_environment_reaches_a_component(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-launcher-secret-0123456789")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    monkeypatch.setenv("PYTHONPATH", "/tmp/evil")
    for env in (app_env(SHAPES["full"], LAYOUT, "/opt/py"), door_env()):
        assert not {"LD_PRELOAD", "PYTHONPATH"} & set(env)
        assert env.get("ANTHROPIC_API_KEY", MODEL_KEY_PLACEHOLDER) == MODEL_KEY_PLACEHOLDER  # a placeholder only
        assert not any("launcher-secret" in value or "evil" in value for value in env.values())


def test_a_door_gets_a_fixed_path_and_locale_only() -> None:
    assert door_env() == {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    door_env()["PATH"] = "/tmp"
    assert door_env()["PATH"] == "/usr/bin:/bin"  # a fresh dict each time
