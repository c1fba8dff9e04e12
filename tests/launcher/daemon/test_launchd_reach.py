"""The path checker runs as the caller: the kernel's DAC walk decides, with the caller's groups, never root's."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _launchd import caller_reach

from launcher.daemon.deputy import Caller

pytestmark = pytest.mark.root

NOBODY = Caller(uid=65534, gid=65534, groups=frozenset({65534}), pid=os.getpid())
GROUP = 0x6F000123  # a group no account has: only a caller given it as a supplementary group holds it


@pytest.fixture
def tree() -> Iterator[Path]:
    tmp_path = Path(tempfile.mkdtemp(prefix="sh-test-reach-", dir="/tmp"))  # pytest's own tmp is root's 0700
    os.chmod(tmp_path, 0o755)
    try:
        yield _fill(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _fill(tmp_path: Path) -> Path:
    (tmp_path / "hidden").mkdir(mode=0o700)  # root's: nobody cannot enter it ...
    (tmp_path / "hidden" / "open.txt").write_text("x")
    os.chmod(tmp_path / "hidden" / "open.txt", 0o644)  # ... so cannot read this, though it is 0644
    (tmp_path / "grouped.txt").write_text("x")
    os.chown(tmp_path / "grouped.txt", 0, GROUP)
    os.chmod(tmp_path / "grouped.txt", 0o640)
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    os.chmod(tmp_path / "tool", 0o700)
    (tmp_path / "mine").mkdir()
    os.chown(tmp_path / "mine", 65534, 65534)
    return tmp_path


def test_the_checker_sees_what_the_caller_sees_not_what_root_sees(tree: Path) -> None:
    paths = [str(tree / name) for name in ("hidden/open.txt", "grouped.txt", "tool", "mine")]
    assert all(os.access(path, os.R_OK) for path in paths)  # root reads them all: the checker must not be root
    reach = caller_reach(NOBODY, paths)
    hidden, grouped, tool, mine = (reach[path] for path in paths)
    assert not hidden.exists and hidden.error == "Permission denied"
    assert grouped.exists and not grouped.readable
    assert tool.exists and not tool.searchable and not tool.readable
    assert mine.exists and mine.is_dir and mine.owner == 65534 and mine.readable and mine.searchable


def test_the_callers_supplementary_groups_count(tree: Path) -> None:
    member = Caller(uid=65534, gid=65534, groups=frozenset({65534, GROUP}), pid=os.getpid())
    assert caller_reach(member, [str(tree / "grouped.txt")])[str(tree / "grouped.txt")].readable
