"""`hello`'s controls from the launcher's side: each probe's target exists and holds what the probe names.

Checked as root while the doors run and before the app starts, so that a probe "held" against a missing
target (a closed fd, a path that is not there, a limit never set) fails `hello` instead of passing it. Before,
`key.read` opened a door's fd 4 as "the SVID memfd", which doors close once they load their key (issue 19.11).
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Callable, Iterator
from typing import Any

from launcher.kernel import cgroups
from launcher.lifecycle.session import SessionInfo
from launcher.policy.layout import APP_SVID

Check = tuple[bool, str]  # held, and what the launcher found


def _proc_uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("Uid:"))
    except (OSError, StopIteration):
        return None


def _other_uid_process(pid: int, owner: str, app: str) -> Check:
    uid = _proc_uid(pid)
    if uid is None:
        return False, f"pid {pid} is not running"
    ok = uid == pwd.getpwnam(owner).pw_uid and uid != pwd.getpwnam(app).pw_uid
    return ok, f"pid {pid} runs as uid {uid} ({owner}), not the app's"


def _door_key_in_memory(pid: int, owner: str, app: str) -> Check:
    """The door is another uid, has loaded OpenSSL (where its key now is) and holds no key memfd any more."""
    alive, found = _other_uid_process(pid, owner, app)
    if not alive:
        return alive, found
    with open(f"/proc/{pid}/maps") as maps:
        crypto = any("libcrypto" in line or "libssl" in line for line in maps)
    return crypto, f"{found}; libcrypto mapped: {crypto} (the key memfd is closed once loaded)"


def _own_svid(path: str, app: str) -> Check:
    try:
        info = os.lstat(path)
        with open(path, "rb") as pem:
            head = pem.read(40)
    except OSError as exc:
        return False, f"{path}: {exc.strerror}"
    ok = stat.S_ISREG(info.st_mode) and info.st_uid == pwd.getpwnam(app).pw_uid and b"PRIVATE KEY-----" in head
    return ok, f"{path}: the app's, a PEM private key first: {ok}"


def _path(path: str, kind: Callable[[int], bool], what: str, mode: int | None = None) -> Check:
    try:
        info = os.lstat(path)
    except OSError as exc:
        return False, f"{path}: {exc.strerror}"
    ok = kind(info.st_mode) and (mode is None or stat.S_IMODE(info.st_mode) == mode)
    return ok, f"{path}: {what} {oct(stat.S_IMODE(info.st_mode))}" if ok else f"{path}: not {what}"


def _limit(sid: str, files: tuple[str, ...], want: int) -> Check:
    """The app's cgroup carries the limit the probe pushes against (v1 or v2 file names)."""
    for directory in cgroups.cgroup_paths(sid, "app"):
        for name in files:
            try:
                with open(os.path.join(directory, name)) as limit:
                    value = limit.read().strip()
            except OSError:
                continue
            return value == str(want), f"{directory}/{name} = {value}"
    return False, f"no {'/'.join(files)} in the app's cgroups"


def _checks(info: SessionInfo, targets: dict[str, Any]) -> Iterator[tuple[str, str, Check]]:
    layout, pid = info.layout, targets["pids"][targets["victim_door"]]
    door, app = layout.user(targets["victim_door"]), layout.user("app")
    yield "workspace.write", "the workspace is a directory DAC would let anyone write", \
        _path(targets["workspace"], stat.S_ISDIR, "a directory", 0o777)
    yield "etc.write", "/etc is a directory", _path("/etc", stat.S_ISDIR, "a directory")
    yield "other_dir.write", "the door's private directory", \
        _path(f"{layout.runtime_dir}/{targets['victim_door']}", stat.S_ISDIR, "a directory")
    yield "control.key_own", "the app's own SVID holds its private key", \
        _own_svid(f"{layout.private_dir('app')}/{APP_SVID}", app)
    yield "key.read", "the door holds its private key, in its memory", _door_key_in_memory(pid, door, app)
    yield "launcher_state.read", "the launcher's journal", _path(targets["journal"], stat.S_ISREG, "a file")
    yield "environ.read", "the door runs, as another uid", _other_uid_process(pid, door, app)
    for role, socket_path in sorted(targets["sockets"].items()):
        if role == targets["off_edge_door"]:
            yield "door.off_edge", f"{role}.sock is a listening socket", _path(socket_path, stat.S_ISSOCK, "a socket")
    yield "door.signal", "the door runs, as another uid", _other_uid_process(pid, door, app)
    yield "memory.limit", "the app's memory limit", \
        _limit(layout.sid, ("memory.limit_in_bytes", "memory.max"), targets["max_memory_mb"] * 1024 * 1024)
    yield "pids.limit", "the app's pids limit", _limit(layout.sid, ("pids.max",), targets["max_pids"])


def target_controls(info: SessionInfo, targets: dict[str, Any]) -> list[dict[str, object]]:
    """One `control.target.<probe>` verdict per probe that aims at something, as hello's probes print them."""
    return [{"probe": f"control.target.{probe}", "attempt": f"launcher (root): {what}", "held": held,
             "who": "launcher (root), before the app ran" if held else "target missing: the probe proves nothing",
             "detail": detail}
            for probe, what, (held, detail) in _checks(info, targets)]
