"""The console script: `sh` reaches the shell client without loading argparse or the launcher's CLI; anything
else is launcher.cli's."""

from __future__ import annotations

import subprocess
import sys

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
