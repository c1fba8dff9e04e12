"""app.cwd in the renders: the app starts in the workspace only where the render shows it the workspace (tests of
the bwrap render running for real: test_bwrap_run.py::test_the_app_starts_where_app_cwd_says)."""

from __future__ import annotations

import yaml
from manifests.samples import DROP, load, sample
from render_cases import FIXED

from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths
from launcher.render import render

WORKSPACE = "/srv/sh-test/ws"
READS: Manifest = load(sample(app__cwd="workspace", doors__fs__hidden=DROP,
                              app__files={"read": [WORKSPACE, "/opt/agent"], "exec": ["/opt/agent/bin"]}))
PRIVATE = SessionPaths(FIXED.sid).private_dir("app")


def _docker_workdirs(manifest: Manifest) -> dict[str, str]:
    """The --workdir of each `docker` command in the script, by the role its container name ends with."""
    script = dict(render(manifest, "docker", FIXED).files)["docker.sh"]
    workdirs: dict[str, str] = {}
    for line in script.splitlines():
        words = line.split()
        if "--workdir" in words and "--name" in words:
            workdirs[words[words.index("--name") + 1].rsplit("-", 1)[1]] = words[words.index("--workdir") + 1]
    return workdirs


def _pod_workdirs(manifest: Manifest) -> dict[str, str]:
    files = dict(render(manifest, "kubernetes", FIXED).files)
    pod = next(doc for doc in yaml.safe_load_all(files["session.yaml"]) if doc["kind"] == "Pod")
    return {container["name"]: container["workingDir"] for container in pod["spec"]["containers"]}


def test_the_app_starts_in_the_workspace_it_reads_when_app_cwd_asks() -> None:
    assert READS.workspace == WORKSPACE and READS.app.cwd == "workspace"
    assert _pod_workdirs(READS)["app"] == WORKSPACE
    assert _docker_workdirs(READS)["app"] == WORKSPACE


def test_without_app_cwd_the_app_starts_in_its_private_dir() -> None:
    plain = load(sample(doors__fs__hidden=DROP, app__files={"read": [WORKSPACE], "exec": []}))
    assert _pod_workdirs(plain)["app"] == PRIVATE
    assert _docker_workdirs(plain)["app"] == PRIVATE
