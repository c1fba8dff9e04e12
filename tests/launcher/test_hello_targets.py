"""`hello` fails when a probe aims at nothing: the launcher-side controls, and the report's verdict on them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from launcher import hello_targets
from launcher.hello import EXPECTED_PROBES, EXPECTED_TARGETS, HelloReport


def _report(target_held: bool, targets: int = EXPECTED_TARGETS) -> HelloReport:
    attacks = [{"probe": f"p{i}", "held": True} for i in range(EXPECTED_PROBES)]
    checked = [{"probe": f"control.target.p{i}", "held": target_held or i > 0} for i in range(targets)]
    return HelloReport(sid="0123abcd", probes=[*checked, {"probe": "control.private_write", "held": True}, *attacks])


def test_hello_is_ok_only_when_every_target_was_there() -> None:
    assert _report(True).ok
    assert not _report(False).ok  # one probe aimed at nothing: every attack "held", hello fails all the same
    assert not _report(True, targets=EXPECTED_TARGETS - 1).ok  # a target never checked


def test_a_missing_path_or_the_wrong_kind_fails_its_target(tmp_path: Path) -> None:
    assert hello_targets._path(str(tmp_path / "gone"), stat.S_ISDIR, "a directory") == \
        (False, f"{tmp_path}/gone: No such file or directory")
    (tmp_path / "file").write_text("")
    assert not hello_targets._path(str(tmp_path / "file"), stat.S_ISDIR, "a directory")[0]
    os.chmod(tmp_path, 0o755)
    assert not hello_targets._path(str(tmp_path), stat.S_ISDIR, "a directory", 0o777)[0]
    assert hello_targets._path(str(tmp_path), stat.S_ISDIR, "a directory", 0o755)[0]


def test_a_process_that_is_gone_is_no_target() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert hello_targets._proc_uid(pid) is None
    assert hello_targets._other_uid_process(pid, "root", "root") == (False, f"pid {pid} is not running")
