"""The layer behind the mount namespace: what session A's app uid and groups meet in the HOST's mounts.

The test runs this as root through `setpriv --reuid=sh-<sid>-app --regid=sh-<sid>-app --init-groups` while
the sessions live: the same uid and groups as the app, but no Landlock, no seccomp and the host's mount
namespace and /proc (no hidepid). Where the app itself got ENOENT (the path is not in its view), the errno
here names the barrier that would hold next: the socket file's group, 0700 owners, the ptrace access check.
It prints one JSON line per attempt, like attack_app.py; argv[1] is a JSON object of targets.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

from attack_app import attempt, connect_unix, open_read, report, socket_families


def door_paths(doors_dir: str, other_sid: str, door_pids: dict[str, int], tmp: str) -> None:
    """Door sockets off the app's edges, by every name; the doors' /proc entries (host /proc)."""
    attempt("door.keys_absolute", connect_unix(f"{doors_dir}/keys.sock"))
    os.chdir(doors_dir)
    attempt("door.keys_relative_cwd", connect_unix("keys.sock"))
    attempt("control.fs_relative_cwd", connect_unix("fs.sock"))
    os.chdir("/")
    attempt("door.keys_hardlink", lambda: os.link(f"{doors_dir}/keys.sock", f"{tmp}/outside-keys-link.sock"))
    os.symlink(f"{doors_dir}/keys.sock", f"{tmp}/outside-keys-symlink.sock")
    attempt("door.keys_symlink", connect_unix(f"{tmp}/outside-keys-symlink.sock"))
    attempt("other_session.fs_socket", connect_unix(f"/run/sharness/{other_sid}/doors/fs.sock"))
    for role, pid in door_pids.items():
        attempt(f"door.proc_fd_listener.{role}", connect_unix(f"/proc/{pid}/fd/5"))
        attempt(f"door.proc_root.{role}", connect_unix(f"/proc/{pid}/root{doors_dir}/keys.sock"))
        attempt(f"door.proc_cwd.{role}", functools.partial(os.listdir, f"/proc/{pid}/cwd"))
        attempt(f"door.proc_svid_memfd.{role}", open_read(f"/proc/{pid}/fd/4"))
    attempt("netns.open_door_ns", open_read(f"/proc/{door_pids['keys']}/ns/net"))


def state(sid: str, other_sid: str, launcher: int) -> None:
    """Other components' directories and files, the launcher's /proc entries, a netns file (0444)."""
    attempt("other_session.app_svid", open_read(f"/run/sharness/{other_sid}/app/svid.pem"))
    attempt("other_session.list_runtime", lambda: os.listdir(f"/run/sharness/{other_sid}"))
    attempt("own_session.keys_private_dir", lambda: os.listdir(f"/run/sharness/{sid}/keys"))
    attempt("own_session.fs_private_dir", lambda: os.listdir(f"/run/sharness/{sid}/fs"))
    attempt("proc.launcher_root", lambda: os.listdir(f"/proc/{launcher}/root"))
    attempt("proc.launcher_mem", open_read(f"/proc/{launcher}/mem"))
    attempt("netns.open_run_netns", open_read(f"/run/netns/sh-{sid}-keys"))


def host(targets: dict[str, Any]) -> None:
    """The host socket under /tmp, another user's command line, rare socket families: what the kernel alone
    gives this uid, so that the app's refusals name its private mounts, its proc and its seccomp filter."""
    attempt("host.pathname_socket", connect_unix(targets["host_socket"]))
    attempt("host.other_users_cmdline", lambda: Path(f"/proc/{targets['secret_pid']}/cmdline").read_bytes().decode())
    report("host.socket_families", results=socket_families())


def main() -> int:
    targets = json.loads(sys.argv[1])
    sid, other = targets["sid"], targets["other_sid"]
    report("outside.identity", uid=os.getuid(), gid=os.getgid(), groups=sorted(os.getgroups()))
    door_paths(f"/run/sharness/{sid}/doors", other, targets["pids"], targets["tmp"])
    state(sid, other, targets["launcher"])
    host(targets)
    report("outside.done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
