"""The shell door's refusals: the error shape for each way a command is not run. Pure: no I/O."""

from __future__ import annotations

import errno
import os
from typing import Any

from doors._refusal import DoorRefused, Refusal
from doors.shell._request import WHO, RunRequest
from doors.shell._spawn import NotStarted


def refuse(status: int, row: str, detail: str, hint: str, who: str = WHO) -> DoorRefused:
    """A refusal of the shell door (or of the kernel, through it)."""
    return DoorRefused(Refusal(status, row, who, detail, hint))


def cwd_refusal(cwd: str, error: int, in_workspace: bool) -> DoorRefused:
    """Why `cwd` could not be opened beneath the workspace (or HOME), by the errno openat2 gave."""
    where = "the workspace" if in_workspace else "HOME (doors.shell.workspace is \"none\")"
    if error == errno.EXDEV:
        return refuse(403, "shell.cwd", f"cwd {cwd[:200]!r} leads out of {where} (through a symlink)",
                       "name a directory inside it", who="kernel")
    if error == errno.ENOENT:
        return refuse(404, "shell.cwd", f"cwd {cwd[:200]!r} does not exist in {where}", "create it first")
    if error == errno.ENOTDIR:
        return refuse(400, "shell.cwd", f"cwd {cwd[:200]!r} is not a directory", "name a directory")
    return refuse(403, "shell.cwd", f"cwd {cwd[:200]!r}: {os.strerror(error)}", "name another directory",
                   who="kernel")


def not_started(run: RunRequest, failure: NotStarted) -> DoorRefused:
    """A command whose child failed a step before execve: not found, not executable, or not confinable."""
    program = run.argv[0][:200]
    if failure.step == "execve" and failure.errno == errno.ENOENT:
        return refuse(404, "shell.request.argv", f"{program!r} was not found (PATH or the path given)",
                       "name a program this session can run")
    if failure.step == "execve" and failure.errno in (errno.EACCES, errno.EPERM):
        return refuse(403, "shell.files.exec", f"executing {program!r} was refused: {os.strerror(failure.errno)}",
                       "list its directory in doors.shell.files.exec (a writable path is never executable)",
                       who="kernel")
    return refuse(500, "shell.confinement", f"the command was not run: its confinement failed at step "
                   f"{failure.step!r} ({os.strerror(failure.errno)})", "report this with the door's audit log")


def refusal_event(refusal: Refusal) -> dict[str, Any]:
    """The audit event of a refused request (no value from it)."""
    return {"door": "shell", "kind": "shell.run", "decision": "refuse", "row": refusal.row,
            "status": refusal.status}
