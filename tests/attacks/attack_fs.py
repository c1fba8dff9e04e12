"""fs door abuse, run by attack_app.py inside the session: ways to plant something the person would run.

The app writes an executable where doors.fs.exec allows it (bin/), then tries to move it (or bin itself) out,
and tries the read-only .git (a hook runs as the person on their next commit). It reports each status.
"""

from __future__ import annotations

from collections.abc import Callable

from doors.fs.client import DoorRefused, FsClient

Report = Callable[..., None]


def _status(report: Report, probe: str, call: Callable[[], object]) -> None:
    try:
        call()
    except DoorRefused as refused:
        report(probe, status=refused.refusal.status, row=refused.refusal.row)
        return
    report(probe, status=200, row=None)


def run(report: Report) -> None:
    with FsClient.from_env() as fs:
        fs.write("bin/tool.sh", b"#!/bin/sh\necho ran-from-workspace\n", executable=True)
        report("fs.exec_written", executable=fs.stat("bin/tool.sh")["executable"])
        _status(report, "fs.exec_outside", lambda: fs.write("tool.sh", b"#!/bin/sh\n", executable=True))
        _status(report, "fs.exec_rename_file_out", lambda: fs.rename("bin/tool.sh", "moved-tool.sh"))
        _status(report, "fs.exec_rename_dir_out", lambda: fs.rename("bin", "tools"))
        _status(report, "fs.git_hook", lambda: fs.write(".git/hooks/pre-commit", b"#!/bin/sh\n"))
        _status(report, "fs.rename_into_git", lambda: fs.rename("bin/tool.sh", ".git/hooks/pre-commit"))
        _status(report, "fs.delete_git_config", lambda: fs.delete(".git/config"))
