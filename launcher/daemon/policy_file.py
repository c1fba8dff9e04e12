"""Read the daemon's policy from disk: a root-owned regular file no one else may change, nor the directories
above it, reached through no symlink. Names are resolved with the machine's account database."""

from __future__ import annotations

import grp
import os
import pwd
import stat

from launcher.daemon.policy import MAX_POLICY_BYTES, LaunchdPolicy, PolicyError, load_policy


def account_id(kind: str, name: str) -> int | None:
    """The uid of user `name` or the gid of group `name`; None when there is none."""
    try:
        return pwd.getpwnam(name).pw_uid if kind == "user" else grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def _refuse_unless_roots(info: os.stat_result, path: str, what: str) -> None:
    if info.st_uid != 0:
        raise PolicyError("", f"{what} {path} is owned by uid {info.st_uid}, not root",
                          f"chown root:root {path}")
    # A sticky directory (/tmp) lets no one else rename or remove the root-owned entry below it.
    sticky_dir = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_dir:
        raise PolicyError("", f"{what} {path} may be written by others (mode {stat.S_IMODE(info.st_mode):04o})",
                          f"chmod go-w {path}")


def read_policy(path: str) -> LaunchdPolicy:
    """The policy at `path`, refused (PolicyError) unless root alone could have written it."""
    if not os.path.isabs(path):
        raise PolicyError("", f"the policy path {path!r} is not absolute", "give an absolute path")
    parent = os.path.dirname(os.path.normpath(path))
    while True:
        info = os.lstat(parent)
        if stat.S_ISLNK(info.st_mode):
            raise PolicyError("", f"{parent} (above the policy) is a symlink", "name the policy by its real path")
        _refuse_unless_roots(info, parent, "the directory")
        if parent == "/":
            break
        parent = os.path.dirname(parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise PolicyError("", f"cannot open the policy {path}: {exc.strerror}",
                          "write the policy there (`make install` puts the example in place)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PolicyError("", f"the policy {path} is not a regular file", "write a regular file")
        _refuse_unless_roots(info, path, "the policy")
        raw = os.read(fd, MAX_POLICY_BYTES + 1)
    finally:
        os.close(fd)
    return load_policy(raw, account_id)
