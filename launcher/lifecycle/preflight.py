"""Checks made before anything is created: what the session needs from this machine as it is."""

from __future__ import annotations

import errno
import os
import stat
import sys
import sysconfig
from dataclasses import dataclass

from launcher.policy.confine_plan import SYSTEM_READ
from launcher.policy.python_reach import EXECUTE, LIST, READ, first_unreachable


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


def refuse_workspace_not_the_callers(path: str, pins: dict[str, tuple[int, int]], fs_owner: WorkspaceOwner | None,
                                     caller_uid: int | None) -> None:
    """sharness-launchd's caller must still own the workspace the session pinned and the fs door's owner: its
    checker looked before the runner did, and a caller who may rename in the workspace's parent could have put
    another's directory there since (docs/decisions/launchd.md, attacks tried). Nothing when not asked by it."""
    if caller_uid is None or (path not in pins and fs_owner is None):
        return
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise PreflightError("workspace", f"the workspace {path} cannot be used: {exc.strerror}",
                             "name a directory you own, and leave it in place") from None
    pinned = pins.get(path, (info.st_dev, info.st_ino))
    owners = {info.st_uid, *([fs_owner.uid] if fs_owner is not None else [])}
    if (info.st_dev, info.st_ino) != pinned or owners != {caller_uid}:
        raise PreflightError("workspace", f"the workspace {path} changed after sharness-launchd checked it: it is "
                             f"no longer a directory uid {caller_uid} owns", "name a directory you own, and leave "
                             "it in place until the session starts")


SOCKET_SCAN_LIMIT = 200_000  # directory entries walked before giving up (said, not silent)


@dataclass(frozen=True)
class SocketScan:
    reachable: tuple[str, ...]  # world-writable Unix sockets found: any uid may connect to them
    complete: bool  # False when the walk stopped at SOCKET_SCAN_LIMIT entries


def reachable_sockets(paths: tuple[str, ...], limit: int = SOCKET_SCAN_LIMIT) -> SocketScan:
    """World-writable sockets under `paths` (symlinks not followed): what Landlock ABI < 9 lets the app reach."""
    found: list[str] = []
    seen = 0
    pending = [os.path.normpath(p) for p in paths]
    while pending:
        path = pending.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISSOCK(info.st_mode) and info.st_mode & 0o002:
            found.append(path)
        if not stat.S_ISDIR(info.st_mode):
            continue
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return SocketScan(tuple(sorted(found)), complete=False)
                    pending.append(entry.path)
        except OSError:
            continue
    return SocketScan(tuple(sorted(found)), complete=True)


def refuse_reachable_sockets(paths: tuple[str, ...], landlock_abi: int) -> SocketScan | None:
    """On Landlock ABI < 9, refuse a session whose app could connect to a world-writable socket it may read."""
    if landlock_abi >= 9 or not paths:
        return None
    scan = reachable_sockets(paths)
    if scan.reachable:
        shown = ", ".join(scan.reachable[:5]) + (" …" if len(scan.reachable) > 5 else "")
        raise PreflightError(
            "app.files.read",
            f"the app could connect to world-writable Unix socket(s) under its read paths: {shown} "
            f"(Landlock ABI {landlock_abi} does not govern connect())",
            "take them out of app.files.read/exec, or make them 0660 for a group the app is not in",
        )
    return scan


def _mode_of(path: str) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def refuse_unreachable_python(python_paths: tuple[str, ...], kept: tuple[str, ...]) -> None:
    """Refuse a session whose components could not run the launcher's Python (they see it as other users).

    `kept` are the session's other paths a component's private root binds (the app's files, the workspace):
    one of them may hold the Python, and then its directories on the way count too.
    """
    needs = {path: LIST for path in (*python_paths, sysconfig.get_paths()["purelib"])}
    needs[os.path.realpath(sys.executable)] = EXECUTE
    needs[os.path.join(sys.prefix, "pyvenv.cfg")] = READ
    found = first_unreachable(needs, (*SYSTEM_READ, *python_paths, *kept), _mode_of)
    if found is not None:
        raise PreflightError("", found.message(), found.hint())


SECRET_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC


def _secret_problem(info: os.stat_result) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid != 0:
        return f"is owned by uid {info.st_uid}, not root"
    if info.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(info.st_mode):04o}: group or others may read or write it"
    return None


def open_secret_file(name: str, path: str) -> int:
    """An fd on `path`, a source of secret `name`: PreflightError naming the row unless it is a root-owned
    0600 regular file opened without following a symlink."""
    row = f"doors.keys.secrets.{name}.from"
    try:
        fd = os.open(path, SECRET_OPEN_FLAGS)
    except OSError as exc:
        what = "is a symlink" if exc.errno == errno.ELOOP else f"cannot be opened: {exc.strerror}"
        raise PreflightError(row, f"the source of secret {name!r}, {path}, {what}",
                             f"point {row} at a root-owned 0600 regular file (not a symlink)") from None
    problem = _secret_problem(os.fstat(fd))
    if problem is not None:
        os.close(fd)
        raise PreflightError(row, f"the source of secret {name!r}, {path}, {problem}",
                             f"chown root:root {path} && chmod 0600 {path}")
    return fd
