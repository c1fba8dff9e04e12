"""Checks made before anything is created: what the session needs from this machine as it is."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass


class PreflightError(Exception):
    """The session cannot start here; nothing was created. Names the row and what to change."""

    def __init__(self, row: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.row = row
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class WorkspaceOwner:
    uid: int
    gid: int


def workspace_owner(path: str) -> WorkspaceOwner:
    """The owner the fs door runs as: the workspace must be a real directory owned by someone other than root."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise PreflightError("workspace", f"the workspace {path} cannot be used: {exc.strerror}",
                             "create it, or point `workspace` at an existing directory") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise PreflightError("workspace", f"the workspace {path} is not a directory (a symlink is refused too)",
                             "point `workspace` at the directory itself")
    if info.st_uid == 0 or info.st_gid == 0:
        raise PreflightError(
            "workspace",
            f"the workspace {path} is owned by root: the fs door runs as the workspace's owner, never as root",
            f"give it to the person whose project it is (chown -R alice:alice {path})",
        )
    return WorkspaceOwner(info.st_uid, info.st_gid)
