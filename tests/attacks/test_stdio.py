"""The app cannot rewrite the launcher's output or choose its verdict, in sessions of their own whose stdio
is not a terminal: stdout and stderr one file (`> out 2>&1`), stdin a pipe the test writes one line to.

Before, the app inherited that file: it could ftruncate it (the launcher's lines gone), and a line it wrote
last read like the launcher's verdict. Now it gets pipes the launcher copies (launcher/lifecycle/piperelay.py)
and drains before it writes its own lines, and an exit code that is the launcher's own is reported as 1
(launcher/policy/verdict.py), with the app's in `--json` as `app_exit_code`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent
STDIN_LINE = "sh-attack-stdin-line"


@dataclass
class StdioRun:
    returncode: int
    output: str  # the one file stdout and stderr went to
    sid: str
    probes: dict[str, dict[str, Any]]
    summary: dict[str, Any]
    left: dict[str, list[str]]

    @property
    def lines(self) -> list[str]:
        return self.output.split("\n")


def _session(root: Path, argv: list[str]) -> StdioRun:
    """One session with `argv` as the app, its launcher's stdout and stderr one file, stdin a pipe."""
    workspace = root / "ws"
    workspace.mkdir()
    manifest = write_manifest(root, basic_manifest(workspace, argv))
    out = root / "out.txt"
    with out.open("wb") as output:  # as a shell's `> out.txt 2>&1`: one open file, not O_APPEND
        launcher = subprocess.run(
            [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
             str(root / "audit"), "--json"],
            input=f"{STDIN_LINE}\n".encode(), stdout=output, stderr=output, timeout=120)
    text = out.read_text(errors="replace")
    reports = [json.loads(line) for line in text.split("\n") if line.startswith('{"probe"')]
    probes = {line["probe"]: line for line in reports}
    summary = json.loads(text[text.rindex("\n{\n") + 1:]) if "\n{\n" in text else {}
    sid = summary.get("sid", "")
    return StdioRun(launcher.returncode, text, sid, probes, summary, leftovers(sid) if sid else {})


@pytest.fixture(scope="module")
def forger() -> Iterator[StdioRun]:
    """The app goes after the shared output file, forges a verdict and exits 70 (the launcher's fail-closed code)."""
    root = Path(tempfile.mkdtemp(prefix="sh-test-stdio-", dir="/var/lib"))
    root.chmod(0o755)
    try:
        yield _session(root, [sys.executable, str(HERE / "stdio_app.py"), "70"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_apps_stdio_are_pipes_not_the_launchers_file(forger: StdioRun) -> None:
    assert forger.probes["stdio"]["fifo"] == {"0": True, "1": True, "2": True}, forger.output
    assert len(set(forger.probes["stdio"]["inodes"].values())) == 3  # three pipes, none shared with the launcher


def test_truncating_or_rewinding_its_output_fails(forger: StdioRun) -> None:
    """ftruncate on a pipe: EINVAL; lseek: ESPIPE (the kernel's pipe). A fresh O_TRUNC open of /proc/self/fd/1:
    EACCES, DAC (a pipe the launcher made is root's, 0600)."""
    assert forger.probes["ftruncate"] == {"probe": "ftruncate", "fd1": "EINVAL", "fd2": "EINVAL"}
    assert forger.probes["lseek"] == {"probe": "lseek", "fd1": "ESPIPE", "fd2": "ESPIPE"}
    assert forger.probes["reopen_trunc"]["errno"] == "EACCES"


def test_the_launchers_lines_are_intact_and_after_the_apps(forger: StdioRun) -> None:
    """The launcher's first line (written before the app started) is still the file's first; both forged
    verdicts come before the real one, which starts a line of its own after the app's unfinished one."""
    sid = forger.sid
    assert forger.lines[0] == f"sharness-launch: session {sid}: starting the fs door", forger.output
    assert forger.lines[2] == f"sharness-launch: session {sid}: 2 doors ready", forger.output
    ended = [index for index, line in enumerate(forger.lines) if f"session {sid} ended:" in line]
    assert len(ended) == 3, forger.output  # two forged (stdout, stderr), then the launcher's
    real = forger.lines[ended[-1]]
    assert real.startswith(f"sharness-launch: session {sid} ended: app exited with code 70;"), real
    assert forger.lines[ended[-1] - 1] == "sh-attack-unfinished"
    assert all("code 0" in forger.lines[index] for index in ended[:2])


def test_stdin_is_a_pipe_the_launcher_fills(forger: StdioRun) -> None:
    assert forger.probes["stdin"]["line"] == STDIN_LINE


def test_an_exit_code_of_the_launchers_own_is_mapped_and_said(forger: StdioRun) -> None:
    """The app exited 70 ("a door died"): the launcher exits 1, says why, and --json carries the 70."""
    assert forger.returncode == 1
    assert forger.summary["exit_code"] == 1 and forger.summary["app_exit_code"] == 70, forger.summary
    assert 'the launcher exits 1 instead, 70 being its own code for "a door died' in forger.summary["reason"]
    assert forger.left == {}


@pytest.mark.parametrize(("code", "launcher_exit"), [(125, 1), (124, 1), (205, 205), (3, 3)])
def test_the_verdict_claims_nothing_the_app_chose(tmp_path: Path, code: int, launcher_exit: int) -> None:
    """125 and 124 are the launcher's own (hash mismatch, TTL): mapped to 1. 205 is what a child whose
    confinement failed at a step exits with, but this app reached execve: its code passes through, in words
    that name no confinement step. Any other code passes through as it is."""
    tmp_path.chmod(0o755)
    run = _session(tmp_path, ["/bin/sh", "-c", f"exit {code}"])
    assert run.returncode == launcher_exit and run.summary["app_exit_code"] == code, run.output
    assert run.summary["reason"].startswith(f"app exited with code {code}"), run.summary
    assert "confinement" not in run.summary["reason"]
