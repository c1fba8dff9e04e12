"""`sharness-launch sh` as a whole process ends at once with its status and its words flushed; as a call it returns."""

from __future__ import annotations

import subprocess
import sys

import pytest

from doors.shell.cli import program
from pki.vocabulary import EXIT_UNAVAILABLE


def test_as_the_whole_process_it_exits_with_its_status_and_its_stderr_flushed() -> None:
    code = ("import sys; sys.argv = ['sharness-launch', 'sh', '--', 'true']; from doors.shell.cli import program; "
            "program(['--', 'true']); print('after', file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={}, timeout=60)
    assert done.returncode == EXIT_UNAVAILABLE
    assert "not inside a sharness session" in done.stderr and "after" not in done.stderr


def test_as_a_call_it_returns_its_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHARNESS_SESSION", raising=False)
    assert program(["--", "true"]) == EXIT_UNAVAILABLE  # pytest's argv is not sh's: no exit here
