"""Per-session Linux users and groups (`sh-…`): no home, /usr/sbin/nologin, own group, fresh ids.

Written straight into /etc/passwd, shadow, group and gshadow under lckpwdf(3), the lock every shadow-suite
tool takes, each file rewritten to `<file>+`, fsynced and renamed over the original as useradd does; one
transaction can hold a whole session's accounts. Why not useradd: docs/decisions/kernel.md (timings). The
ids are drawn under the same lock by launcher/kernel/session_ids.py: never one in use or handed out lately.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from launcher.kernel import session_ids
from launcher.kernel._sys import libc
from launcher.policy.id_alloc import NoFreeIds

_NAME = re.compile(r"^sh-[a-z0-9][a-z0-9-]{0,28}$")
NOLOGIN = "/usr/sbin/nologin"
NO_HOME = "/nonexistent"
DB_FILES = ("/etc/group", "/etc/gshadow", "/etc/shadow", "/etc/passwd")  # written in this order on create


class UserError(RuntimeError):
    """A user or group operation failed; the message says which account and why."""


def _check_name(name: str) -> None:
    """Only `sh-` names: the launcher must never be able to touch an account it did not make."""
    if not _NAME.match(name):
        raise UserError(f"account name {name!r} refused: session accounts are sh-[a-z0-9-], at most 32 chars")


# --- pure core: account files in, account files out ---------------------------------------------


@dataclass(frozen=True)
class AccountFiles:
    """The text of the four account databases."""

    passwd: str
    shadow: str
    group: str
    gshadow: str


def _names(text: str) -> set[str]:
    return {line.split(":", 1)[0] for line in text.splitlines() if line and not line.startswith("#")}


def _ids(text: str) -> set[int]:
    ids = set()
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) > 2 and fields[2].isdigit():
            ids.add(int(fields[2]))
    return ids


def _append(text: str, lines: list[str]) -> str:
    if not lines:
        return text
    return text + ("" if not text or text.endswith("\n") else "\n") + "".join(f"{line}\n" for line in lines)


def account_ids(files: AccountFiles) -> set[int]:
    """Every uid and gid the account files hold."""
    return _ids(files.passwd) | _ids(files.group)


def add_accounts(
    files: AccountFiles, users: Iterable[str], groups: Mapping[str, Iterable[str]], days: int, ids: Sequence[int],
) -> tuple[AccountFiles, dict[str, int]]:
    """Add each user (with its own group, uid == gid) and each group with its members; return the new
    files and every new name's id. `ids` are given to the users, then the groups, in order."""
    users, groups = list(users), {g: list(m) for g, m in groups.items()}
    new_names = [*users, *groups]
    for name in new_names + [m for members in groups.values() for m in members]:
        _check_name(name)
    taken_names = _names(files.passwd) | _names(files.group)
    clash = sorted(set(new_names) & taken_names) or sorted({n for n in new_names if new_names.count(n) > 1})
    if clash:
        raise UserError(f"account {clash[0]} already exists: remove it (sharness-launch gc) first")
    known_users = _names(files.passwd) | set(users)
    for group, members in groups.items():
        unknown = [m for m in members if m not in known_users]
        if unknown:
            raise UserError(f"group {group}: member {unknown[0]} is not a user")
    if len(ids) != len(new_names) or len(set(ids)) != len(ids) or set(ids) & account_ids(files):
        raise UserError(f"{len(new_names)} distinct unused ids needed for {', '.join(new_names)}, got {list(ids)}")
    by_name = dict(zip(new_names, ids, strict=True))
    all_groups = {**{u: [] for u in users}, **groups}
    return AccountFiles(
        passwd=_append(files.passwd, [f"{u}:x:{by_name[u]}:{by_name[u]}::{NO_HOME}:{NOLOGIN}" for u in users]),
        shadow=_append(files.shadow, [f"{u}:!:{days}::::::" for u in users]),
        group=_append(files.group, [f"{g}:x:{by_name[g]}:{','.join(m)}" for g, m in all_groups.items()]),
        gshadow=_append(files.gshadow, [f"{g}:!::{','.join(m)}" for g, m in all_groups.items()]),
    ), by_name


def _drop(text: str, names: set[str], member_field: int | None) -> str:
    """Remove lines whose name is in `names`, and those names from member lists (field `member_field`)."""
    out = []
    for line in text.splitlines():
        fields = line.split(":")
        if fields[0] in names:
            continue
        if member_field is not None and len(fields) > member_field and fields[member_field]:
            members = fields[member_field].split(",")
            fields[member_field] = ",".join(m for m in members if m not in names)
            line = ":".join(fields)
        out.append(line)
    return "".join(f"{line}\n" for line in out)


def remove_accounts(files: AccountFiles, names: Iterable[str]) -> AccountFiles:
    """Remove users and groups named (a user's own group goes with it) and strip them from member lists."""
    doomed = set(names)
    for name in doomed:
        _check_name(name)
    if not doomed & (_names(files.passwd) | _names(files.group)):
        return files
    return AccountFiles(
        passwd=_drop(files.passwd, doomed, None),
        shadow=_drop(files.shadow, doomed, None),
        group=_drop(files.group, doomed, 3),
        gshadow=_drop(files.gshadow, doomed, 3),
    )


# --- I/O: one locked transaction over the four files ---------------------------------------------


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _replace_file(path: str, text: str) -> None:
    """Write `<path>+` with the original's mode and owner, fsync it, rename it over `path`."""
    st = os.stat(path)
    tmp = path + "+"
    if os.path.lexists(tmp):
        os.unlink(tmp)  # a crashed writer's leftover; we hold the lock
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, st.st_mode & 0o7777)
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
        os.fchmod(fd, st.st_mode & 0o7777)
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def _transaction(edit: Callable[[AccountFiles], AccountFiles], order: tuple[str, ...]) -> None:
    try:
        libc.lckpwdf()
    except OSError as exc:
        raise UserError(f"cannot lock the account files (lckpwdf): {exc.strerror} (root? useradd running?)") from exc
    try:
        paths = dict(zip(("group", "gshadow", "shadow", "passwd"), DB_FILES, strict=True))
        old = AccountFiles(**{kind: _read(path) for kind, path in paths.items()})
        new = edit(old)
        for kind in order:
            if getattr(new, kind) != getattr(old, kind):
                _replace_file(paths[kind], getattr(new, kind))
        dir_fd = os.open("/etc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        libc.ulckpwdf()


def create_accounts(users: Iterable[str], groups: Mapping[str, Iterable[str]],
                    avoid: Iterable[int] = ()) -> dict[str, int]:
    """Create every user (own group, uid == gid) and group in one locked transaction; name → id.

    Each id is fresh (launcher/kernel/session_ids.py) and none is in `avoid` (e.g. the workspace owner's)."""
    users, groups = list(users), {g: list(m) for g, m in groups.items()}
    for name in [*users, *groups, *(m for members in groups.values() for m in members)]:
        _check_name(name)  # before the lock: a bad name never waits on, or needs, root
    ids: dict[str, int] = {}
    days = int(time.time() // 86400)
    avoided = set(avoid)

    def edit(files: AccountFiles) -> AccountFiles:
        try:
            fresh = session_ids.allocate(len(users) + len(groups), account_ids(files) | avoided)
        except NoFreeIds as exc:
            raise UserError(f"no id for the session's accounts: {exc}") from None
        new, made = add_accounts(files, users, groups, days, fresh)
        ids.update(made)
        return new

    _transaction(edit, ("group", "gshadow", "shadow", "passwd"))
    return ids


def delete_accounts(names: Iterable[str]) -> None:
    """Remove users and groups (absent ones are success) in one locked transaction."""
    doomed = list(names)
    for name in doomed:
        _check_name(name)
    _transaction(lambda files: remove_accounts(files, doomed), ("passwd", "shadow", "group", "gshadow"))


def create_user(name: str) -> int:
    """Create system user `name` with its own group, no home, no login shell; return its uid."""
    return create_accounts([name], {})[name]


def create_group(name: str, members: Iterable[str]) -> int:
    """Create system group `name` whose supplementary members are the given users; return its gid."""
    return create_accounts([], {name: list(members)})[name]


def delete_user(name: str) -> None:
    """Remove user `name` and its own group; success when already gone."""
    delete_accounts([name])


def delete_group(name: str) -> None:
    """Remove group `name`; success when already gone."""
    delete_accounts([name])


def uid_of(name: str) -> int:
    """The uid of a user; KeyError when there is none."""
    return pwd.getpwnam(name).pw_uid


def gid_of(name: str) -> int:
    """The gid of a group; KeyError when there is none."""
    return grp.getgrnam(name).gr_gid


