"""app.cwd "workspace": the app starts in the workspace, as an agent CLI started in its project expects, so its
relative paths (and its children's) are workspace paths, with every row still held."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.kernel.fuse_mount import fuse_available
from tests.integration._session import LAUNCHER, basic_manifest, manifest_hash, probes_and_summary, write_manifest

pytestmark = pytest.mark.root

APP = r"""
import json, os, subprocess
def probe(name, act):
    try:
        print(json.dumps({"probe": name, "ok": act()}), flush=True)
    except OSError as exc:
        print(json.dumps({"probe": name, "errno": exc.errno}), flush=True)
def write(path, data):
    with open(path, "w") as out:
        out.write(data)
    return True
probe("cwd", os.getcwd)
probe("write_relative", lambda: write("notes.txt", "relative\n"))
probe("read_only_relative", lambda: write(".git/HEAD", "x"))
probe("child_cwd", lambda: subprocess.run(["/bin/pwd"], capture_output=True, text=True).stdout.strip())
"""


def _run(tmp_path: Path, app_rows: dict[str, object]) -> tuple[subprocess.CompletedProcess[str], Path]:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "HEAD").write_text("ref: main\n")
    subprocess.run(["chown", "-R", "65534:65534", str(workspace)], check=True)
    document = basic_manifest(workspace, [sys.executable, "-c", APP])
    document["app"].update(app_rows)  # type: ignore[attr-defined]
    if app_rows.get("workspace") != "mount":
        document["app"]["files"]["read"] = [str(workspace)]  # type: ignore[index]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(tmp_path / "audit"), "--json"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    return done, workspace


@pytest.mark.skipif(fuse_available() is not None, reason="needs /dev/fuse")
def test_the_app_starts_in_the_mounted_workspace_and_relative_writes_go_through_the_fs_door(tmp_path: Path) -> None:
    done, workspace = _run(tmp_path, {"workspace": "mount", "cwd": "workspace"})
    assert done.returncode == 0, done.stderr
    probes, _ = probes_and_summary(done.stdout)
    assert probes["cwd"]["ok"] == str(workspace) and probes["child_cwd"]["ok"] == str(workspace)
    assert probes["write_relative"]["ok"] is True
    landed = (workspace / "notes.txt").stat()
    assert (workspace / "notes.txt").read_text() == "relative\n" and landed.st_uid == 65534
    assert probes["read_only_relative"]["errno"] == errno.EACCES
    assert (workspace / ".git" / "HEAD").read_text() == "ref: main\n"


def test_a_read_only_workspace_is_the_cwd_and_stays_read_only(tmp_path: Path) -> None:
    done, workspace = _run(tmp_path, {"cwd": "workspace"})
    assert done.returncode == 0, done.stderr
    probes, _ = probes_and_summary(done.stdout)
    assert probes["cwd"]["ok"] == str(workspace)
    assert probes["write_relative"]["errno"] in (errno.EROFS, errno.EACCES)
    assert not (workspace / "notes.txt").exists()


def test_the_default_is_the_apps_private_directory(tmp_path: Path) -> None:
    done, workspace = _run(tmp_path, {"workspace": "mount"})
    assert done.returncode == 0, done.stderr
    probes, _ = probes_and_summary(done.stdout)
    assert probes["cwd"]["ok"].startswith("/run/sharness/") and probes["cwd"]["ok"].endswith("/app")
    assert not (workspace / "notes.txt").exists()
