"""Planting something the person would run, through the fs door (an edge the app has): held by the door's
rows. `exec`: 0755 only inside doors.fs.exec, and (fixed in doors/fs, a837daa) no rename takes an executable
out; `read_only` .git: no hook, no rename into it, no delete."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


def test_the_door_writes_an_executable_only_inside_an_exec_prefix(attacks: AttackRun) -> None:
    assert attacks.a.probes["fs.exec_written"]["executable"] is True
    assert attacks.a.probes["fs.exec_outside"] == {"probe": "fs.exec_outside", "status": 403, "row": "exec"}


@pytest.mark.parametrize("probe", ["fs.exec_rename_file_out", "fs.exec_rename_dir_out"])
def test_a_rename_does_not_take_an_executable_out(attacks: AttackRun, probe: str) -> None:
    assert attacks.a.probes[probe] == {"probe": probe, "status": 403, "row": "exec"}
    assert not (attacks.workspace_a / "moved-tool.sh").exists() and not (attacks.workspace_a / "tools").exists()


@pytest.mark.parametrize("probe", ["fs.git_hook", "fs.rename_into_git", "fs.delete_git_config"])
def test_git_stays_read_only(attacks: AttackRun, probe: str) -> None:
    assert attacks.a.probes[probe] == {"probe": probe, "status": 403, "row": "read_only"}
    assert not (attacks.workspace_a / ".git" / "hooks" / "pre-commit").exists()
    assert (attacks.workspace_a / ".git" / "config").read_text() == "[core]\n"
