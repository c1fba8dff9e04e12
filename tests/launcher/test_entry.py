"""The console script: `sh` reaches the shell client without loading argparse or the launcher's CLI; anything
else is launcher.cli's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from launcher.entry import script_text
from pki.vocabulary import EXIT_UNAVAILABLE


def _entry(*argv: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys; sys.argv = {['sharness-launch', *argv]!r}; from launcher.entry import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          env={}, timeout=60)


def test_sh_loads_neither_argparse_nor_the_launcher_cli() -> None:
    done = _entry("sh", "--", "true")
    loaded = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert done.returncode == EXIT_UNAVAILABLE and "not inside a sharness session" in done.stderr
    assert "doors.shell.cli" in loaded and not {"argparse", "gettext", "launcher.cli"} & loaded


def test_every_other_command_is_the_launcher_cli() -> None:
    done = _entry("--help")
    assert done.returncode == 0 and "sharness-launch" in done.stdout and " sh " in done.stdout


def _written_script(tmp_path: Path) -> Path:
    script = tmp_path / "sharness-launch"
    subprocess.run([sys.executable, "-I", "-m", "launcher.entry", "--write-script", str(script)], check=True,
                   cwd=tmp_path, timeout=60)
    return script


def test_the_written_script_runs_sh_without_site(tmp_path: Path) -> None:
    """`sh` through the script: no site (hence none of the venv's .pth code), the project found all the same."""
    script = _written_script(tmp_path)
    assert script.stat().st_mode & 0o777 == 0o755
    assert script.read_text().splitlines()[0] == f"#!{sys.executable} -S"
    done = subprocess.run([str(script), "sh", "--", "true"], capture_output=True, text=True, env={}, timeout=60)
    assert done.returncode == EXIT_UNAVAILABLE and "not inside a sharness session" in done.stderr
    # The same start, watched: the interpreter's flags of the shebang, the script as the program.
    watched = subprocess.run([sys.executable, "-S", "-X", "importtime", str(script), "sh", "--", "true"],
                             capture_output=True, text=True, env={}, timeout=60)
    loaded = {line.rpartition("|")[2].strip() for line in watched.stderr.splitlines()
              if line.startswith("import time:")}
    assert "doors.shell.cli" in loaded and not {"site", "launcher", "launcher.entry", "launcher.cli"} & loaded


def test_every_other_command_through_the_script_runs_site_first(tmp_path: Path) -> None:
    """Without site the launcher's dependencies (site-packages) would not import: `--help` needs them."""
    done = subprocess.run([str(_written_script(tmp_path)), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "sharness-launch" in done.stdout and " sh " in done.stdout


def test_a_shebang_it_cannot_write_is_refused() -> None:
    for python in ("python3", "/opt/my python/bin/python3"):
        with pytest.raises(ValueError, match="absolute path without spaces"):
            script_text(python, "/tmp")
