"""fs door abuse, run by attack_app.py inside the session: ways to plant something the person would run.

The app writes an executable where doors.fs.exec allows it (bin/), then tries to move it (or bin itself) out,
and tries the read-only .git (a hook runs as the person on their next commit). Then names a person would
misread: a bidi override that makes a script list as an image, a zero-width character that makes a second
`.git` beside the read-only one, a line separator. It reports each status (and the refusal's detail).
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


# probe -> (what the app calls, the name): what a person would see in a listing is in the comment.
MISREAD_NAMES = {
    "fs.name_bidi_override": ("write", "invoice-\u202egnp.sh"),  # lists as invoice-hs.png
    "fs.name_zero_width_git": ("mkdir", ".git\u200b"),  # a writable .git beside the read-only one
    "fs.name_zero_width_joiner": ("write", ".gi\u200dtignore"),
    "fs.name_line_separator": ("write", "notes\u2028README.md"),  # one name shown on two lines
    "fs.name_tag_characters": ("write", "ok\U000e0069\U000e0067.txt"),  # invisible text after "ok"
}


def _misread(report: Report, probe: str, call: Callable[[], object]) -> None:
    try:
        call()
    except DoorRefused as refused:
        report(probe, status=refused.refusal.status, row=refused.refusal.row, detail=refused.refusal.detail)
        return
    report(probe, status=200, row=None, detail=None)


def _misread_names(report: Report, fs: FsClient) -> None:
    for probe, (call, name) in MISREAD_NAMES.items():
        if call == "mkdir":
            _misread(report, probe, lambda name=name: fs.mkdir(name))
        else:
            _misread(report, probe, lambda name=name: fs.write(name, b"#!/bin/sh\necho planted\n"))
    _misread(report, "fs.name_bidi_rename", lambda: fs.rename("bin/tool.sh", "bin/tool\u202etxt.sh"))


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
        _misread_names(report, fs)
