"""Per-session Linux users and groups (`sh-…`): system users, no home, /usr/sbin/nologin, own group.

Created with the shadow suite's useradd/groupadd (they lock, write and fsync /etc/passwd, shadow, group and
gshadow the way every other account tool expects); see docs/decisions/kernel.md for the timing.
"""

from __future__ import annotations

import grp
import pwd
import re
import subprocess

_NAME = re.compile(r"^sh-[a-z0-9][a-z0-9-]{0,28}$")
_NOLOGIN = "/usr/sbin/nologin"
_NO_SUCH_ACCOUNT = 6  # useradd/userdel/groupdel exit status: the named user or group does not exist


class UserError(RuntimeError):
    """A user or group operation failed; the message carries the tool's own words."""


def _check_name(name: str) -> None:
    """Only `sh-` names: the launcher must never be able to touch an account it did not make."""
    if not _NAME.match(name):
        raise UserError(f"account name {name!r} refused: session accounts are sh-[a-z0-9-], at most 32 chars")


def _run(argv: list[str], ok: tuple[int, ...] = (0,)) -> int:
    env = {"PATH": "/usr/sbin:/usr/bin"}
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if proc.returncode not in ok:
        raise UserError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.returncode


def uid_of(name: str) -> int:
    """The uid of a user; KeyError when there is none."""
    return pwd.getpwnam(name).pw_uid


def gid_of(name: str) -> int:
    """The gid of a group; KeyError when there is none."""
    return grp.getgrnam(name).gr_gid


def create_user(name: str) -> int:
    """Create system user `name` with its own group, no home, no login shell; return its uid."""
    _check_name(name)
    _run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
          "--shell", _NOLOGIN, name])
    return uid_of(name)


def create_group(name: str, members: tuple[str, ...] | list[str]) -> int:
    """Create system group `name` whose supplementary members are the given users; return its gid."""
    _check_name(name)
    for member in members:
        _check_name(member)
    argv = ["groupadd", "--system"]
    if members:
        argv += ["--users", ",".join(members)]
    _run([*argv, name])
    return gid_of(name)


def delete_user(name: str) -> None:
    """Remove user `name` (and its own group); success when it is already gone."""
    _check_name(name)
    _run(["userdel", name], ok=(0, _NO_SUCH_ACCOUNT))
    # userdel keeps the user's group when another user lists it; the journal has it as the user's own.
    delete_group(name)


def delete_group(name: str) -> None:
    """Remove group `name`; success when it is already gone."""
    _check_name(name)
    _run(["groupdel", name], ok=(0, _NO_SUCH_ACCOUNT))
