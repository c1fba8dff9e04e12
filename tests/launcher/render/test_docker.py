"""The Docker render: goldens of the examples, and every command it writes parsed by the docker client itself,
offline (no daemon: a command whose flags and values parse gets as far as "Cannot connect to the Docker daemon").
The client reads the seccomp files too, so a profile missing beside the script is caught."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from render_cases import COVERING, EXAMPLES, FIXED, example
from render_golden import assert_golden

from launcher.commands.render import write_files
from launcher.render import render
from launcher.render.docker import commands

DOCKER = shutil.which("docker")
NO_DAEMON = "Cannot connect to the Docker daemon"
needs_docker = pytest.mark.skipif(DOCKER is None, reason="no docker client on this machine")


def client_verdict(argv: list[str], cwd: Path) -> str | None:
    """None when the docker client accepts `argv`, else what it said. DOCKER_HOST points at no socket."""
    if argv[0] == "timeout":
        argv = argv[argv.index("docker"):]
    env = {**os.environ, "DOCKER_HOST": f"unix://{cwd}/no-daemon.sock", "DOCKER_CONFIG": str(cwd / ".docker")}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
    said = (done.stdout + done.stderr).strip()
    return None if NO_DAEMON in said else said


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_golden(name: str) -> None:
    assert_golden("docker", name, render(example(name), "docker", FIXED))


@needs_docker
@pytest.mark.parametrize("name", sorted({**COVERING, **EXAMPLES}))
def test_the_docker_client_accepts_every_command(name: str, tmp_path: Path) -> None:
    manifest = COVERING[name] if name in COVERING else example(name)
    write_files(render(manifest, "docker", FIXED), str(tmp_path))
    refused = {" ".join(argv[:3]): verdict for argv in commands(manifest, FIXED)
               if (verdict := client_verdict(argv, tmp_path)) is not None}
    assert refused == {}


@needs_docker
@pytest.mark.parametrize(("what", "change"), [
    ("an unknown flag", lambda argv: [*argv[:2], "--bogus", *argv[2:]]),
    ("a bad memory size", lambda argv: [arg if arg != "512m" else "512q" for arg in argv]),
    ("a seccomp profile missing", lambda argv: [arg.replace("seccomp/app.json", "seccomp/gone.json") for arg in argv]),
])
def test_the_docker_client_catches_a_broken_command(what: str, change: object, tmp_path: Path) -> None:
    manifest = COVERING["every-row"]
    write_files(render(manifest, "docker", FIXED), str(tmp_path))
    app = next(argv for argv in commands(manifest, FIXED) if argv[:2] == ["docker", "run"] and argv[4].endswith("-app"))
    assert client_verdict(app, tmp_path) is None
    assert callable(change)
    assert client_verdict(change(app), tmp_path) is not None, what


def test_the_script_tears_down_whatever_happens() -> None:
    script = dict(render(COVERING["every-row"], "docker", FIXED).files)["docker.sh"]
    assert "trap teardown EXIT" in script
    body = script.split("trap teardown EXIT", 1)[1]
    assert "docker rm" not in body and "docker network rm" not in body
