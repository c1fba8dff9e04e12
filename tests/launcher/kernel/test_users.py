"""Users and groups: the pure account-file edit, then real accounts written under lckpwdf."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import subprocess

import pytest

from launcher.kernel import users
from launcher.kernel.users import AccountFiles, UserError, add_accounts, remove_accounts
from launcher.policy import id_alloc

BASE = AccountFiles(
    passwd="root:x:0:0:root:/root:/bin/bash\nsvc:x:999:999::/nonexistent:/usr/sbin/nologin\n",
    shadow="root:*:20000:0:99999:7:::\nsvc:!:20000::::::\n",
    group="root:x:0:\nsvc:x:999:\nsh-old:x:997:\n",
    gshadow="root:*::\nsvc:!::\nsh-old:!::\n",
)

# --- pure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["root", "alice", "sh-", "sh-A", "sh-a/b", "sh-" + "a" * 40, "sh-a:b"])
def test_only_session_names_are_accepted(bad: str) -> None:
    for op in (users.create_user, users.delete_user, users.delete_group):
        with pytest.raises(UserError, match="refused"):
            op(bad)
    with pytest.raises(UserError, match="refused"):
        add_accounts(BASE, ["sh-ok"], {"sh-ok-to": [bad]}, 1, [5001, 5002])


def test_add_gives_the_ids_handed_in_and_writes_all_four_files() -> None:
    files, ids = add_accounts(BASE, ["sh-s-app", "sh-s-fs"], {"sh-s-to-fs": ["sh-s-app"]}, 20786, [7, 9, 8])
    assert ids == {"sh-s-app": 7, "sh-s-fs": 9, "sh-s-to-fs": 8}
    assert files.passwd.endswith(
        "sh-s-app:x:7:7::/nonexistent:/usr/sbin/nologin\nsh-s-fs:x:9:9::/nonexistent:/usr/sbin/nologin\n")
    assert files.shadow.endswith("sh-s-app:!:20786::::::\nsh-s-fs:!:20786::::::\n")
    assert files.group.endswith("sh-s-app:x:7:\nsh-s-fs:x:9:\nsh-s-to-fs:x:8:sh-s-app\n")
    assert files.gshadow.endswith("sh-s-to-fs:!::sh-s-app\n")
    assert files.passwd.startswith(BASE.passwd)  # nothing else touched


def test_add_refuses_clashes_unknown_members_and_ids_in_use() -> None:
    with pytest.raises(UserError, match="sh-old already exists"):
        add_accounts(BASE, ["sh-old"], {}, 1, [5])
    with pytest.raises(UserError, match="sh-x already exists"):
        add_accounts(BASE, ["sh-x"], {"sh-x": []}, 1, [5, 6])
    with pytest.raises(UserError, match="member sh-ghost is not a user"):
        add_accounts(BASE, [], {"sh-g": ["sh-ghost"]}, 1, [5])
    for ids in ([999, 5], [5, 997], [5, 5], [5]):  # an account's uid, a group's gid, twice, too few
        with pytest.raises(UserError, match="distinct unused ids"):
            add_accounts(BASE, ["sh-a", "sh-b"], {}, 1, ids)


def test_remove_drops_users_their_groups_and_memberships_and_is_idempotent() -> None:
    files, _ = add_accounts(BASE, ["sh-s-app", "sh-s-net"], {"sh-s-to-fs": ["sh-s-app", "sh-s-net"]}, 1,
                            [998, 996, 995])
    after = remove_accounts(files, ["sh-s-app"])
    assert "sh-s-app" not in after.passwd and "sh-s-app" not in after.shadow
    assert "sh-s-to-fs:x:995:sh-s-net\n" in after.group and "sh-s-to-fs:!::sh-s-net\n" in after.gshadow
    everything = remove_accounts(after, ["sh-s-net", "sh-s-to-fs"])
    assert everything == BASE
    assert remove_accounts(BASE, ["sh-s-app"]) is BASE


# --- real accounts ------------------------------------------------------------------------------


@pytest.mark.root
def test_user_and_group_lifecycle() -> None:
    a, b, g = (f"sh-test-{secrets.token_hex(3)}" for _ in range(3))
    try:
        uid_a = users.create_user(a)
        users.create_user(b)
        entry = pwd.getpwnam(a)
        assert entry.pw_uid == uid_a == users.uid_of(a)
        assert id_alloc.SESSION_IDS[0] <= uid_a <= id_alloc.SESSION_IDS[1]  # no other allocator's range
        assert entry.pw_shell == "/usr/sbin/nologin" and entry.pw_dir == "/nonexistent"
        assert grp.getgrgid(entry.pw_gid).gr_name == a  # its own group
        gid = users.create_group(g, [a, b])
        assert grp.getgrnam(g).gr_gid == gid == users.gid_of(g)
        assert sorted(grp.getgrnam(g).gr_mem) == sorted([a, b])
        assert os.getgrouplist(a, entry.pw_gid).count(gid) == 1
        with pytest.raises(UserError, match="already exists"):
            users.create_user(a)
        # The shadow suite's own checkers find nothing wrong with what we wrote.
        checks = subprocess.run(["sh", "-c", "pwck -r; grpck -r"], capture_output=True, text=True, check=False)
        assert not [line for line in (checks.stdout + checks.stderr).splitlines() if a in line or g in line]
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


@pytest.mark.root
def test_a_whole_session_in_one_transaction_coexists_with_useradd() -> None:
    sid = secrets.token_hex(3)
    names = [f"sh-test-{sid}-{r}" for r in ("app", "fs")]
    group = f"sh-test-{sid}-to-fs"
    outsider = f"sh-test-{sid}-ua"
    modes = {path: os.stat(path) for path in users.DB_FILES}
    try:
        ids = users.create_accounts(names, {group: [names[0]]})
        subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", outsider], check=True)
        assert users.uid_of(outsider) not in ids.values()
        assert {users.uid_of(n) for n in names} == {ids[n] for n in names}
        for path, st in modes.items():
            now = os.stat(path)
            assert (now.st_mode, now.st_uid, now.st_gid) == (st.st_mode, st.st_uid, st.st_gid), path
    finally:
        users.delete_accounts([*names, group, outsider])
    with open("/etc/group") as f:
        group_file = f.read()
    assert not [n for n in (*names, group, outsider) if n in group_file]
