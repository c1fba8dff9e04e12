"""`sharness-launch demo`: a real agent session on a copy of the sample project (manifests/examples/demo/).

The manifest is manifests/examples/demo/manifest.json with only its paths set for this run (this tree's agent,
settings and interpreter, a fresh copy of the project); its hash is printed before anything starts. The copy
is removed at the end, as every session's resources are; the audit log stays where every session's does.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import launcher
from launcher.kernel.probe_facts import KernelFacts
from launcher.lifecycle.audit_verify import LOG_NAME
from launcher.lifecycle.session import RunOptions, Session, SessionResult
from launcher.manifest import Manifest, load_manifest
from pki.vocabulary import AUDIT_ROOT, DEMO_ROOT

DEMO_DIR = Path(launcher.__file__).resolve().parent.parent / "manifests" / "examples" / "demo"
TEMPLATE = DEMO_DIR / "manifest.json"
NOBODY = 65534  # the workspace's owner: the fs door runs as it, never as root


@dataclass(frozen=True)
class DemoRun:
    """A finished demo session: its result and the audit lines it wrote (read back after it was signed)."""

    manifest: Manifest
    result: SessionResult
    audit_lines: tuple[bytes, ...]


def demo_manifest(workspace: str, python: str = sys.executable) -> Manifest:
    """The demo's manifest for a project copy at `workspace`: the template with its paths set for this run."""
    document: dict[str, Any] = json.loads(TEMPLATE.read_text())
    app, template_workspace = document["app"], document["workspace"]
    app["argv"] = [python, str(DEMO_DIR / "agent.py")]
    app["home_seed"] = str(DEMO_DIR / "settings")
    app["env"]["DEMO_WORKSPACE"] = workspace
    app["files"]["read"] = [workspace if path == template_workspace else path for path in app["files"]["read"]]
    document["workspace"] = workspace
    return load_manifest(json.dumps(document).encode())


def copy_project(workspace: str) -> None:
    """The sample project, with a .git the fs door keeps read-only, owned by NOBODY."""
    shutil.copytree(DEMO_DIR / "project", workspace)
    git = shutil.which("git")
    if git is not None:
        subprocess.run([git, "init", "-q", workspace], check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:  # what .git's row protects is its being there, not git's own format
        os.makedirs(f"{workspace}/.git")
        Path(f"{workspace}/.git/HEAD").write_text("ref: refs/heads/main\n")
    for root, dirs, files in os.walk(workspace):
        for name in (root, *(os.path.join(root, entry) for entry in (*dirs, *files))):
            os.chown(name, NOBODY, NOBODY, follow_symlinks=False)


def run_demo(facts: KernelFacts, audit_root: str = AUDIT_ROOT,
             progress: Callable[[str], None] | None = None, summary_on_stdout: bool = False) -> DemoRun:
    """Copy the project, run the agent's session, read its audit log back; the copy is removed afterwards."""
    os.makedirs(DEMO_ROOT, mode=0o755, exist_ok=True)
    workspace = f"{DEMO_ROOT}/sh-demo-{secrets.token_hex(4)}"
    try:
        copy_project(workspace)
        manifest = demo_manifest(workspace)
        if progress is not None:
            progress(f"demo: manifest {manifest.sha256} (manifests/examples/demo/manifest.json, paths set for "
                     f"this run), workspace {workspace}")
        options = RunOptions(audit_root=audit_root, progress=progress, summary_on_stdout=summary_on_stdout)
        result = Session(manifest, facts, options).run()
        with open(f"{result.audit_dir}/{LOG_NAME}", "rb") as log:
            lines = tuple(log.read().splitlines())
        return DemoRun(manifest, result, lines)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        with contextlib.suppress(OSError):  # the root too, unless another demo is using it
            os.rmdir(DEMO_ROOT)
