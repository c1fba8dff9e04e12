"""The launcher run from a Python the components can or cannot reach, as root.

The venv is built from a copy of this interpreter under a 0700 directory: the shape of a pyenv or uv build
under /root, whose binary lies outside both sys.prefix and sys.base_prefix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration._session import basic_manifest, leftovers, manifest_hash, new_leftovers, write_manifest

pytestmark = pytest.mark.root
MAIN = "import sys; from launcher.cli import main; sys.exit(main())"


@pytest.fixture
def private_python() -> Iterator[Path]:
    """A venv (mode 0755) inside a 0700 directory, on a copy of this interpreter in that directory; it sees
    this test run's packages through a .pth file. Yields the venv."""
    top = Path(tempfile.mkdtemp(prefix="sh-test-python-"))
    try:
        binary = top / "python" / "bin" / os.path.basename(os.path.realpath(sys.executable))
        binary.parent.mkdir(parents=True)
        shutil.copy2(os.path.realpath(sys.executable), binary)
        venv = top / "venv"
        subprocess.run([str(binary), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
        site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                               "['purelib'])"], check=True, capture_output=True, text=True).stdout.strip()
        ours = sysconfig.get_paths()["purelib"]
        Path(site, "sharness-test.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
        assert os.path.realpath(venv / "bin" / "python") == str(binary)
        yield venv
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _run(venv: Path, tmp_path: Path, app: list[str]) -> subprocess.CompletedProcess[str]:
    workspace, audit = tmp_path / "workspace", tmp_path / "audit"
    workspace.mkdir()
    audit.mkdir()
    manifest = write_manifest(tmp_path, basic_manifest(workspace, app))
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", MAIN, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
         "--audit-dir", str(audit), "--best-effort", "--json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd="/",
    )


def test_an_interpreter_outside_both_prefixes_under_a_0700_directory_runs_the_app(private_python: Path,
                                                                                  tmp_path: Path) -> None:
    """The directories above a kept path do not count, and the app may execute the binary its venv links to."""
    python = str(private_python / "bin" / "python")
    check = f"import sys, doors.client; sys.exit(0 if sys.prefix == {str(private_python)!r} else 3)"
    done = _run(private_python, tmp_path, [python, "-c", check])
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}


def test_a_venv_other_users_cannot_enter_is_refused_before_anything_is_created(private_python: Path,
                                                                               tmp_path: Path) -> None:
    private_python.chmod(0o700)
    before = leftovers()
    done = _run(private_python, tmp_path, ["/bin/true"])
    assert done.returncode == 78, done.stderr
    assert f"{private_python} lacks read and search (rx) permission for other users" in done.stderr
    assert f"chmod o+rx {private_python}" in done.stderr and "nothing was created" in done.stderr
    assert new_leftovers(before) == {}
    assert list((tmp_path / "audit").iterdir()) == []
