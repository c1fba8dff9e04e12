"""Users and groups: real accounts made with the shadow tools, removed idempotently."""

from __future__ import annotations

import grp
import pwd
import secrets

import pytest

from launcher import users
from launcher.users import UserError


@pytest.mark.parametrize("bad", ["root", "alice", "sh-", "sh-A", "sh-a/b", "sh-" + "a" * 40, "sh-a:b"])
def test_only_session_names_are_accepted(bad: str) -> None:
    for op in (users.create_user, users.delete_user, users.delete_group):
        with pytest.raises(UserError, match="refused"):
            op(bad)
    with pytest.raises(UserError, match="refused"):
        users.create_group("sh-ok", [bad])


@pytest.mark.root
def test_user_and_group_lifecycle() -> None:
    a, b, g = (f"sh-test-{secrets.token_hex(3)}" for _ in range(3))
    try:
        uid_a = users.create_user(a)
        users.create_user(b)
        entry = pwd.getpwnam(a)
        assert entry.pw_uid == uid_a == users.uid_of(a) and uid_a < 1000  # a system user
        assert entry.pw_shell == "/usr/sbin/nologin" and entry.pw_dir == "/nonexistent"
        assert grp.getgrgid(entry.pw_gid).gr_name == a  # its own group
        gid = users.create_group(g, [a, b])
        assert grp.getgrnam(g).gr_gid == gid == users.gid_of(g)
        assert sorted(grp.getgrnam(g).gr_mem) == sorted([a, b])
        with pytest.raises(UserError, match="exited"):
            users.create_user(a)  # already there: the tool's own words come back
    finally:
        users.delete_group(g)
        users.delete_user(a)
        users.delete_user(b)
    for name in (a, b, g):
        with pytest.raises(KeyError):
            pwd.getpwnam(name)
        with pytest.raises(KeyError):
            grp.getgrnam(name)
    users.delete_user(a)  # idempotent: absent is success
    users.delete_group(g)
