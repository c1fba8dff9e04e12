"""Measurements the hello probe does not make, run inside the bwrap render: one JSON line per row measured.

Standard library only: it runs as the app, confined. Each line is {"row", "held", "detail"}: held means the
row's claim was seen to hold. argv[1] is a JSON object of what the test knows from outside.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable


def _say(row: str, held: bool, detail: str) -> None:
    print(json.dumps({"row": row, "held": held, "detail": detail}), flush=True)


def _text(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _refused(action: Callable[[], object]) -> str | None:
    """The errno name the action failed with, or None when it succeeded."""
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return None


def _written_is_executable() -> bool:
    path = os.path.join(os.environ["TMPDIR"], "run-me")
    with open(path, "w") as script:
        script.write("#!/bin/sh\nexit 0\n")
    os.chmod(path, stat.S_IRWXU)
    return os.spawnv(os.P_WAIT, path, [path]) == 0


def _bind_loopback() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return _refused(lambda: sock.bind(("127.0.0.1", 0)))


def main() -> int:
    outside = json.loads(sys.argv[1])
    status = _text("/proc/self/status")
    _say("no_new_privs", "NoNewPrivs:\t1" in status, "/proc/self/status NoNewPrivs")
    ipc = os.stat("/proc/self/ns/ipc").st_ino
    _say("ipc", ipc != outside["ipc_ns"], f"IPC namespace inode {ipc}, outside {outside['ipc_ns']}")
    uid_map = _text("/proc/self/uid_map").split()
    _say("uid", uid_map[1] != str(outside["caller_uid"]), f"uid_map {' '.join(uid_map)}: outside uid {uid_map[1]}")
    executable = _written_is_executable()
    _say("landlock.fs", not executable, f"a file written in TMPDIR {'ran' if executable else 'did not run'}")
    if outside["deny_inet"]:
        made = _refused(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
        _say("landlock.tcp", made is not None, f"socket(AF_INET): {made or 'made'}")
    else:
        bound = _bind_loopback()
        _say("landlock.tcp", bound is not None, f"bind 127.0.0.1:0: {bound or 'bound'}")
    tmp = os.statvfs(os.environ["TMPDIR"])
    size_mb = tmp.f_blocks * tmp.f_frsize // (1024 * 1024)
    _say("scratch", size_mb == outside["scratch_mb"] and tmp.f_files == outside["scratch_inodes"],
         f"TMPDIR holds {size_mb} MiB and {tmp.f_files} inodes")
    proxies = [name for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy") if name in os.environ]
    _say("proxy_env", bool(proxies), f"proxy variables set: {proxies}")
    doors = [name for name in os.environ if name.startswith("SHARNESS_DOOR_")]
    _say("edges", bool(doors), f"door variables: {doors}")
    child = subprocess.run([sys.executable, "-I", "-c", "print(open('/proc/self/status').read())"],
                           capture_output=True, text=True, check=True).stdout
    inherited = "NoNewPrivs:\t1" in child and "Seccomp:\t2" in child
    _say("children", inherited, f"a child process: no_new_privs and a seccomp filter {'kept' if inherited else 'lost'}")
    links = [line.split(":")[0].strip() for line in _text("/proc/net/dev").splitlines()[2:]]
    _say("netns", links == ["lo"], f"interfaces: {links}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
