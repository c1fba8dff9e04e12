"""The Python-agent example (manifests/examples/python-sdk-agent.json) in a real session: an agent on the
official SDK, unmodified, edits the workspace with plain open() (the fs door's mount) and runs pytest as its own
child; the model door's twin plays the model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from launcher.demo import DEMO_DIR
from tests.integration._session import LAUNCHER, leftovers, manifest_hash, write_manifest

pytestmark = [pytest.mark.root, pytest.mark.slow]
EXAMPLES = DEMO_DIR.parent
# The fix as the model sends it: manifest strings hold no newline, so one line of Python does it.
FIX = "add = lambda a, b: a + b; mul = lambda a, b: a * b"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
SCRIPT = {
    "twin": "twin-script/v0", "markers": False,
    "rules": [
        {"times": 1, "reply": {"content": [{"type": "tool_use", "name": "write_file",
                                            "input": {"path": "calc.py", "content": FIX}}]}},
        {"times": 1, "reply": {"content": [{"type": "tool_use", "name": "run", "input": {"argv": PYTEST}}]}},
    ],
    "default": {"text": "The tests pass."},
}


def sdk_agent_manifest(workspace: Path) -> dict[str, Any]:
    """The example with this machine's paths: the interpreter that has `anthropic`, the twin for the provider."""
    document: dict[str, Any] = json.loads((EXAMPLES / "python-sdk-agent.json").read_text())
    app = document["app"]
    app["argv"] = [sys.executable, str(EXAMPLES / "python-sdk-agent" / "agent.py"), str(workspace),
                   "Make the failing test pass."]
    app["env"].pop("PYTHONPATH")  # this interpreter has the SDK already
    app["files"]["read"] = [path for path in app["files"]["read"] if path != "/opt/sdk-agent"]
    app["files"]["read"] = [str(workspace) if path == document["workspace"] else path for path in app["files"]["read"]]
    document["workspace"] = str(workspace)
    document["doors"]["model"] = {"upstream": "twin", "budget_microusd": 100000, "twin_script": SCRIPT}
    del document["doors"]["keys"]
    document["edges"] = [edge for edge in document["edges"] if "keys" not in edge]
    return document


def test_an_unmodified_sdk_agent_writes_with_open_and_runs_pytest_as_its_child(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    shutil.copytree(DEMO_DIR / "project", workspace)
    for path in (workspace, *workspace.iterdir()):
        os.chown(path, 65534, 65534)
    manifest = write_manifest(tmp_path, sdk_agent_manifest(workspace))
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                           "--audit-dir", str(tmp_path / "audit")], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "tool write_file({'path': 'calc.py'" in done.stdout and "-> written" in done.stdout
    assert "-> exit 0" in done.stdout and "model: The tests pass." in done.stdout
    assert (workspace / "calc.py").read_text() == FIX  # written through the mount: the fs door wrote it
    assert (workspace / "calc.py").stat().st_uid == 65534
    summary = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}


def _run(tmp_path: Path, document: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                           "--audit-dir", str(tmp_path / "audit")], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    summary = json.loads(done.stdout[done.stdout.index("\n{") + 1:]) if "\n{" in done.stdout else {}
    return done, summary


def test_a_shell_script_agent_asks_with_curl_writes_with_a_redirection_and_runs_make(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "Makefile").write_text(
        "test:\n\tgrep -q 'no open issues' NOTES.md && echo notes-ok\n"
        "\techo v2 >> CHANGELOG.md && echo appended\n"
        "\t(echo lost > CHANGELOG.md) && echo TRUNCATED || echo truncate-refused\n")
    (workspace / "CHANGELOG.md").write_text("v1\n")
    for path in (workspace, *workspace.iterdir()):
        os.chown(path, 65534, 65534)
    document: dict[str, Any] = json.loads((EXAMPLES / "shell-script-agent.json").read_text())
    document["app"]["argv"] = ["/usr/bin/sh", str(EXAMPLES / "shell-script-agent" / "agent.sh"), str(workspace),
                               "summarise the open issues"]
    document["app"]["files"]["read"] = []
    document["workspace"] = str(workspace)
    document["doors"]["model"] = {"upstream": "twin", "budget_microusd": 100000, "twin_script": {
        "twin": "twin-script/v0", "markers": False, "default": {"text": "There are no open issues."}}}
    del document["doors"]["keys"]
    document["edges"] = [edge for edge in document["edges"] if "keys" not in edge]
    done, summary = _run(tmp_path, document)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "notes-ok" in done.stdout  # make, the script's child, read what its redirection wrote
    assert (workspace / "NOTES.md").read_text() == "There are no open issues.\n"
    assert "appended" in done.stdout and "truncate-refused" in done.stdout  # doors.fs.append_only, as an errno
    assert "CHANGELOG.md: Operation not permitted" in done.stderr
    assert (workspace / "CHANGELOG.md").read_text() == "v1\nv2\n"
    assert (workspace / "NOTES.md").stat().st_uid == 65534  # the fs door wrote it, as the workspace's owner
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}
