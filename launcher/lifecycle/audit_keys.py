"""The registry of audit keys: each session's public key, kept by the launcher outside the audit directory.

`<audit root>/../keys/<sid>.pub` (for the real root, /var/lib/sharness/keys/), root 0700, written when the log is
created. `verify-audit` trusts it over the directory's own audit.pub: a log cut at a line boundary and re-signed
with a new key, or another session's log copied under this session's id, no longer reads "intact" (issue 19.10).
A registry is trusted only when root owns it and no one else may write it.
"""

from __future__ import annotations

import os
import stat

REGISTRY_NAME = "keys"


def registry_for(audit_root: str) -> str:
    """The registry beside an audit root (never inside a session's audit directory)."""
    return os.path.join(os.path.dirname(os.path.normpath(audit_root)), REGISTRY_NAME)


def register(audit_root: str, sid: str, public_pem: bytes) -> str:
    """Record `sid`'s public key (O_EXCL: a session's key is written once); the path, or "" when the place is
    not root's own directory (a symlink, someone else's dir in /tmp): then verify-audit says "unverified key"."""
    registry = registry_for(audit_root)
    os.makedirs(registry, mode=0o700, exist_ok=True)
    info = os.lstat(registry)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        return ""
    os.chmod(registry, 0o700)
    path = os.path.join(registry, f"{sid}.pub")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, public_pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _root_only(info: os.stat_result) -> bool:
    return info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def registered_key(audit_dir: str, sid: str) -> tuple[bytes | None, str]:
    """(the registered PEM, "") or (None, why there is none to trust) for the log in `audit_dir`."""
    registry = registry_for(os.path.dirname(os.path.normpath(audit_dir)))
    path = os.path.join(registry, f"{sid}.pub")
    try:
        directory = os.lstat(registry)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None, f"no key registered for session {sid} in {registry} (a log from another machine?)"
    try:
        if not (stat.S_ISDIR(directory.st_mode) and _root_only(directory) and _root_only(os.fstat(fd))):
            return None, f"{registry} is not root's alone: its key is not trusted"
        return os.read(fd, 65536), ""
    finally:
        os.close(fd)
