"""Run a test's child as another user in the host's mounts, with this Python and this tree reachable.

A clone may sit under a directory other users cannot enter (/root, a 0700 home, `mktemp -d`). The launcher's
components never need to pass it: each sees its paths through a private root whose directories above them
are a 0755 tmpfs (launcher/kernel/mountns.py). A test that starts a process as another user straight from
the tree does need it. So, in a mount namespace of that child alone, each such directory on the way to the
interpreter and the tree is covered by a tmpfs others may search, holding bind mounts of all its entries:
the child sees the host as it is, with those directories passable. Where nothing blocks, nothing changes.

In a forked child, as root, before it drops its ids: open_ancestors(). In place of setpriv (as a program,
which execs the command as the user): [*as_user.argv(65534), *command].
"""

from __future__ import annotations

import argparse
import os
import pwd
import stat
import sys
import sysconfig

from launcher.kernel._sys import libc
from launcher.policy.python_reach import PASS, first_unreachable

MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_SLAVE = 0x2, 0x4, 0x1000, 0x4000, 1 << 19
PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_paths() -> tuple[str, ...]:
    """What a child running this Python from this tree opens: prefixes, stdlib, site-packages, the tree."""
    paths = sysconfig.get_paths()
    return (sys.prefix, sys.base_prefix, paths["stdlib"], paths["purelib"], os.path.realpath(sys.executable),
            PROJECT)


def _mode_of(path: str) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _pass_through(directory: str) -> None:
    """Cover `directory` with a tmpfs that others may search, holding bind mounts of every entry it had."""
    info = os.stat(directory)
    links, handles = {}, {}
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.islink(path):
            links[name] = os.readlink(path)
        else:
            handles[name] = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mode = stat.S_IMODE(info.st_mode) | stat.S_IXGRP | stat.S_IXOTH
        libc.mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV,
                   f"mode={mode:o},uid={info.st_uid},gid={info.st_gid},size=64k")
        for name, target in links.items():
            os.symlink(target, os.path.join(directory, name))
        for name, handle in handles.items():
            target = os.path.join(directory, name)
            if stat.S_ISDIR(os.fstat(handle).st_mode):
                os.mkdir(target)
            else:
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            libc.mount(f"/proc/self/fd/{handle}", target, None, MS_BIND | MS_REC)
    finally:
        for handle in handles.values():
            os.close(handle)


def open_ancestors(paths: tuple[str, ...] | None = None) -> None:
    """In a forked child, as root: make every directory above `paths` (default: this Python's) passable."""
    needs = dict.fromkeys(python_paths() if paths is None else paths, PASS)
    blocked = first_unreachable(needs, (), _mode_of)
    if blocked is None:
        return
    libc.unshare(libc.CLONE_NEWNS)
    libc.mount(None, "/", None, MS_REC | MS_SLAVE)  # the host's later mounts still arrive; ours never leave
    while blocked is not None:
        _pass_through(blocked.path)
        blocked = first_unreachable(needs, (), _mode_of)


def argv(user: str | int, *, init_groups: bool = False) -> list[str]:
    """The prefix that runs a command as `user` (no supplementary groups, or its own with init_groups)."""
    return [sys.executable, "-P", os.path.abspath(__file__), *(["--init-groups"] if init_groups else []), str(user),
            "--"]


def main() -> None:
    parser = argparse.ArgumentParser(description="run a command as another user, this Python reachable")
    parser.add_argument("user", help="a user name or uid; its primary group is the gid")
    parser.add_argument("--init-groups", action="store_true", help="the user's supplementary groups (else none)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    entry = pwd.getpwuid(int(args.user)) if args.user.isdigit() else pwd.getpwnam(args.user)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    open_ancestors()
    os.setgroups(os.getgrouplist(entry.pw_name, entry.pw_gid) if args.init_groups else [])
    os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
    os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.exit(f"as_user: cannot execute {command[0]!r} as {entry.pw_name}: {exc.strerror}")


if __name__ == "__main__":
    main()
