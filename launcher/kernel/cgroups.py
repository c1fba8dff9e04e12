"""Per-component cgroups with memory and pids limits: v2 where the unified hierarchy has the controllers,
else v1 memory + pids (this machine's hybrid layout). Directories: `<root>/sharness/<sid>/<role>`."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

CONTROLLERS = ("memory", "pids")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
_KILL_TIMEOUT_S = 5.0
_PIDFD_BATCH = 256  # pidfds open at once while killing: well under the launcher's fd limit


class CgroupError(RuntimeError):
    """A cgroup could not be created, joined or removed; the message names the file and what to check."""


@dataclass(frozen=True)
class Mount:
    """One cgroup mount: where it is, its fs type, and its v1 controllers (empty for v2)."""

    mount_point: str
    fstype: str
    controllers: frozenset[str]


@dataclass(frozen=True)
class ControllerPlace:
    """Where one controller lives: ("v2" or "v1", mount point)."""

    version: str
    root: str


def parse_mountinfo(text: str) -> tuple[Mount, ...]:
    """The cgroup and cgroup2 mounts in /proc/self/mountinfo text (pure)."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mount_point = fields[4].replace("\\040", " ")
        opts = frozenset(tail[2].split(",")) if tail[0] == "cgroup" else frozenset()
        mounts.append(Mount(mount_point, tail[0], opts & frozenset(CONTROLLERS)))
    return tuple(mounts)


def place_controllers(mounts: Iterable[Mount], v2_available: frozenset[str]) -> dict[str, ControllerPlace]:
    """Per controller: v2 when the unified hierarchy offers it, else the v1 mount holding it (pure)."""
    mounts = tuple(mounts)
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    places: dict[str, ControllerPlace] = {}
    for ctrl in CONTROLLERS:
        if v2 is not None and ctrl in v2_available:
            places[ctrl] = ControllerPlace("v2", v2.mount_point)
            continue
        v1 = next((m for m in mounts if m.fstype == "cgroup" and ctrl in m.controllers), None)
        if v1 is not None:
            places[ctrl] = ControllerPlace("v1", v1.mount_point)
    return places


def cgroup_dirs(places: dict[str, ControllerPlace], sid: str, role: str) -> tuple[str, ...]:
    """The distinct cgroup directories a (sid, role) gets, in controller order (pure)."""
    for name in (sid, role):
        if not _NAME.match(name):
            raise CgroupError(f"cgroup name part {name!r} is not [a-z0-9-]: refusing to build a path from it")
    dirs: list[str] = []
    for ctrl in CONTROLLERS:
        if ctrl in places:
            path = os.path.join(places[ctrl].root, "sharness", sid, role)
            if path not in dirs:
                dirs.append(path)
    return tuple(dirs)


def controller_places() -> dict[str, ControllerPlace]:
    """Where memory and pids can be limited on this machine."""
    with open("/proc/self/mountinfo") as f:
        mounts = parse_mountinfo(f.read())
    available: frozenset[str] = frozenset()
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    if v2 is not None:
        try:
            with open(os.path.join(v2.mount_point, "cgroup.controllers")) as f:
                available = frozenset(f.read().split())
        except OSError:
            available = frozenset()
    return place_controllers(mounts, available)


def cgroup_paths(sid: str, role: str) -> tuple[str, ...]:
    """The directories create_cgroup(sid, role, …) will make: journal these before creating."""
    return cgroup_dirs(controller_places(), sid, role)


@dataclass(frozen=True)
class CgroupHandle:
    """The cgroup directories of one component (one per hierarchy)."""

    paths: tuple[str, ...]

    def join(self, pid: int = 0) -> None:
        """Move pid (0: the caller) into every one of this component's cgroups."""
        for path in self.paths:
            _write(os.path.join(path, "cgroup.procs"), str(pid))


def _write(path: str, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as exc:
        raise CgroupError(f"writing {value!r} to {path} failed: {exc.strerror}") from exc


def _enable_v2_subtree(root: str, sid: str, ctrls: list[str]) -> None:
    """In v2 a controller works in a child only when every ancestor enables it in cgroup.subtree_control."""
    enable = " ".join(f"+{c}" for c in ctrls)
    for rel in ("", "sharness", os.path.join("sharness", sid)):
        _write(os.path.join(root, rel, "cgroup.subtree_control"), enable)


def _limit_v2(path: str, ctrls: list[str], max_memory_bytes: int, max_pids: int) -> None:
    if "memory" in ctrls:
        _write(os.path.join(path, "memory.max"), str(max_memory_bytes))
        if os.path.exists(os.path.join(path, "memory.swap.max")):
            _write(os.path.join(path, "memory.swap.max"), "0")
    if "pids" in ctrls:
        _write(os.path.join(path, "pids.max"), str(max_pids))


def _limit_v1(path: str, ctrl: str, max_memory_bytes: int, max_pids: int) -> None:
    if ctrl == "pids":
        _write(os.path.join(path, "pids.max"), str(max_pids))
        return
    _write(os.path.join(path, "memory.limit_in_bytes"), str(max_memory_bytes))
    # memsw bounds memory+swap: set equal so swap cannot extend the limit (must come after limit_in_bytes).
    memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
    if os.path.exists(memsw):
        _write(memsw, str(max_memory_bytes))


def create_cgroup(sid: str, role: str, max_memory_bytes: int, max_pids: int) -> CgroupHandle:
    """Make `<root>/sharness/<sid>/<role>` in each hierarchy holding memory or pids, and set both limits."""
    if max_memory_bytes <= 0 or max_pids <= 0:
        raise CgroupError(f"limits must be positive (memory {max_memory_bytes}, pids {max_pids})")
    places = controller_places()
    missing = [c for c in CONTROLLERS if c not in places]
    if missing:
        raise CgroupError(f"no cgroup hierarchy holds {', '.join(missing)}: mount cgroup v2 or v1 {missing}")
    paths = cgroup_dirs(places, sid, role)
    for path in paths:
        ctrls = [c for c in CONTROLLERS if cgroup_dirs({c: places[c]}, sid, role) == (path,)]
        version = places[ctrls[0]].version
        try:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            if version == "v2":
                _enable_v2_subtree(places[ctrls[0]].root, sid, ctrls)
            os.mkdir(path, 0o755)
        except OSError as exc:
            raise CgroupError(f"cannot create cgroup {path}: {exc.strerror}") from exc
        if version == "v2":
            _limit_v2(path, ctrls, max_memory_bytes, max_pids)
        else:
            for ctrl in ctrls:
                _limit_v1(path, ctrl, max_memory_bytes, max_pids)
    return CgroupHandle(paths)


def delegate(handle: CgroupHandle, uid: int, gid: int) -> None:
    """Let `uid` make cgroups under each of the component's directories (the shell door's commands): the
    directory becomes its, its files stay root's, so its own limits and membership are not its to change.
    v1 and v2 limits are hierarchical: a child cgroup never holds more than this one."""
    for path in handle.paths:
        try:
            os.chown(path, uid, gid)
        except OSError as exc:
            raise CgroupError(f"cannot delegate cgroup {path} to uid {uid}: {exc.strerror}") from exc


def _children(path: str) -> list[str]:
    """The child cgroups of `path`, deepest first (each child's own children before it)."""
    found: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                found.extend(_children(entry.path))
                found.append(entry.path)
    return found


def _read_pids(path: str) -> list[int]:
    with open(os.path.join(path, "cgroup.procs")) as f:
        return [int(p) for p in f.read().split()]


def kill_members(path: str, pids: Iterable[int]) -> int:
    """SIGKILL each of `pids` that is in the cgroup at `path`, through a pidfd: never a stranger. Returns
    how many were signalled.

    A pid read from cgroup.procs may have left and been reused by the time root signals it. A pidfd pins
    one process; cgroup.procs is read again after every pidfd is open, and only a pidfd whose pid is still
    listed is signalled. If its process was alive for that read it held the pid then, so it was the member;
    if it has died since, the signal gets ESRCH (a pidfd never follows a reused pid).
    """
    pidfds: dict[int, int] = {}
    try:
        for pid in pids:
            try:
                pidfds[pid] = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            except OSError as exc:
                raise CgroupError(f"pidfd_open({pid}) from {path}/cgroup.procs failed: {exc.strerror}") from exc
        members = set(_read_pids(path))
        signalled = 0
        for pid, pidfd in pidfds.items():
            if pid in members:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    signalled += 1
        return signalled
    finally:
        for pidfd in pidfds.values():
            os.close(pidfd)


def _kill_all(path: str) -> None:
    """SIGKILL every process in the cgroup until it is empty (a fork racing the kill is caught next round):
    v2's cgroup.kill where it exists, else through verified pidfds (kill_members)."""
    deadline = time.monotonic() + _KILL_TIMEOUT_S
    kill_file = os.path.join(path, "cgroup.kill")
    delay = 0.0005
    while True:
        pids = _read_pids(path)
        if not pids:
            return
        if time.monotonic() > deadline:
            raise CgroupError(f"cgroup {path} still holds pids {pids} after SIGKILL for {_KILL_TIMEOUT_S}s")
        if os.path.exists(kill_file):
            _write(kill_file, "1")
        else:
            for start in range(0, len(pids), _PIDFD_BATCH):
                kill_members(path, pids[start:start + _PIDFD_BATCH])
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _is_session_cgroup(path: str) -> bool:
    parts = path.rstrip("/").split("/")
    return os.path.isabs(path) and len(parts) >= 4 and parts[-3] == "sharness" and all(
        _NAME.match(p) for p in parts[-2:]
    )


def _rmdir_quiet(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EBUSY):
            raise CgroupError(f"cannot remove cgroup {path}: {exc.strerror}") from exc


def delete_cgroup(path: str) -> None:
    """Kill what is left in `<root>/sharness/<sid>/<role>`, remove it, then its empty parents. Idempotent."""
    if not _is_session_cgroup(path):
        raise CgroupError(f"refusing to delete {path!r}: not a <root>/sharness/<sid>/<role> cgroup")
    if os.path.isdir(path):
        _kill_all(path)  # first: the shell door, which makes child cgroups (its commands cannot)
        for child in _children(path):  # a delegated cgroup's own (the shell's commands): emptied, removed
            _kill_all(child)
            _remove_busy(child)
        _remove_busy(path)
    sid_dir = os.path.dirname(path)
    _rmdir_quiet(sid_dir)
    _rmdir_quiet(os.path.dirname(sid_dir))


def _remove_busy(path: str) -> None:
    """rmdir, retried while the last members are exiting: a killed process holds its cgroup until it is reaped,
    and an orphan (a command's double-fork) is reaped by pid 1, in its own time."""
    deadline = time.monotonic() + _KILL_TIMEOUT_S
    delay = 0.001
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise CgroupError(f"cannot remove cgroup {path}: {exc.strerror}") from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
