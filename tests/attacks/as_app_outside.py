"""The layers behind the private root: what session A's app uid and groups meet in the HOST's mounts.

The test runs this as sh-<sid>-app with that user's groups (tests/as_user.py, like `setpriv --init-groups`)
while the sessions live, twice: `dac` (the same uid and groups as the app, but no Landlock, no seccomp, the
host's mount namespace and /proc without hidepid) and `landlock` (the same, inside the app's own Landlock
rules, which it applies first). Where the app itself got ENOENT (the path is not in its view), the errno
here names the barrier that would hold next: the socket file's group, 0700 owners, the ptrace check, or
Landlock. It prints one JSON line per attempt, like attack_app.py; argv: the mode, then a JSON object.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

from attack_app import socket_families, steal_fd, write_text
from attack_probes import attempt, connect_unix, open_read, open_write, report, run_status

from launcher.kernel.landlock import LandlockRules, apply_landlock
from launcher.kernel.probe import landlock_abi

PR_SET_NO_NEW_PRIVS = 38


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
        attempt(f"door.pidfd_getfd.{role}", functools.partial(steal_fd, pid, 5))
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
    """Host sockets, another user's command line, rare socket families: what the kernel alone gives this uid,
    so that the app's refusals name its private root, its proc and its seccomp filter."""
    attempt("host.pathname_socket", connect_unix(targets["host_socket"]))
    attempt("host.var_lib_socket", connect_unix(targets["var_lib_socket"]))
    attempt("host.other_users_cmdline", lambda: Path(f"/proc/{targets['secret_pid']}/cmdline").read_bytes().decode())
    report("host.socket_families", results=socket_families())
    attempt("file.etc_shadow", open_read("/etc/shadow"))


def landlocked(targets: dict[str, Any]) -> None:
    """What DAC would allow the app's uid but its Landlock rules refuse (or, for sockets, do not govern)."""
    sid, audit_dir = targets["sid"], f"{targets['audit_root']}/{targets['sid']}"
    report("workspace.exec_door_written", **run_status([f"{targets['workspace']}/bin/tool.sh"]))
    attempt("audit.list_root", lambda: os.listdir(targets["audit_root"]))
    attempt("audit.read_log", open_read(f"{audit_dir}/audit.jsonl"))
    attempt("audit.append_log", lambda: os.close(os.open(f"{audit_dir}/audit.jsonl", os.O_WRONLY | os.O_APPEND)))
    attempt("audit.create_file", open_write(f"{audit_dir}/forged.jsonl"))
    for controller, name, value in (("memory", "memory.limit_in_bytes", "-1"), ("pids", "pids.max", "max")):
        path = f"/sys/fs/cgroup/{controller}/sharness/{sid}/app/{name}"
        attempt(f"cgroup.raise_{controller}", functools.partial(write_text, path, value))
    attempt("cgroup.join_fs_door", lambda: write_text(f"/sys/fs/cgroup/pids/sharness/{sid}/fs/cgroup.procs",
                                                      str(os.getpid())))
    attempt("proc.sysctl_write", lambda: write_text("/proc/sys/kernel/hostname", "sh-attack"))
    attempt("tty.open_dev_tty", open_read("/dev/tty"))
    attempt("tty.open_person_tty", lambda: os.close(os.open(targets["person_tty"], os.O_RDWR)))
    attempt("netns.open_run_netns", open_read(f"/run/netns/sh-{sid}-keys"))
    attempt("host.pathname_socket", connect_unix(targets["host_socket"]))
    attempt("host.var_lib_socket", connect_unix(targets["var_lib_socket"]))
    attempt("file.etc_shadow", open_read("/etc/shadow"))
    # Its own private dir (0700, its own), here a writable mount: only Landlock refuses the create.
    attempt("landlock.private_dir_create", open_write(f"{os.path.dirname(targets['tmp'])}/sh-attack-outside-{sid}"))


def enter_landlock(rules: dict[str, list[str]]) -> None:
    """The app's own Landlock rules (read, write, exec paths; signal and abstract-socket scoping)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    apply_landlock(LandlockRules(read=tuple(rules["read"]), write=tuple(rules["write"]),
                                 exec=tuple(rules["exec"]), if_present=tuple(rules["if_present"])), landlock_abi())


def main() -> int:
    mode, targets = sys.argv[1], json.loads(sys.argv[2])
    report("outside.identity", mode=mode, uid=os.getuid(), gid=os.getgid(), groups=sorted(os.getgroups()))
    if mode == "landlock":
        enter_landlock(targets["landlock"])
        report("control.usr_listed", entries=len(os.listdir("/usr")))  # a read path of the app still reads
        landlocked(targets)
    else:
        door_paths(f"/run/sharness/{targets['sid']}/doors", targets["other_sid"], targets["pids"], targets["tmp"])
        state(targets["sid"], targets["other_sid"], targets["launcher"])
        host(targets)
    report("outside.done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
