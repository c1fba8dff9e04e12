"""Each command's own cgroup, under the shell door's (which the launcher delegated to the shell's user).

`own_cgroup_dirs` reads where the door's cgroups are from /proc/self/cgroup and its mount namespace's
mountinfo (pure parse, I/O at the edge). A command's cgroup is `<door cgroup>/cmd-z<n>` (its zygote's:
doors/shell/_spare.py) in every hierarchy the door is in (v1 memory and pids here; the limits are the door's,
hierarchical). The child joins it before
execve; at the command's end, its timeout, or the session's, `kill_all` kills every process still in it,
double-forked or not, through pidfds (a pid read from cgroup.procs is never a stranger's).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from dataclasses import dataclass

import trio

CONTROLLERS = ("memory", "pids")


def parse_own_cgroups(proc_cgroup: str) -> dict[str, str]:
    """Controller (or "" for v2) → the cgroup path of this process, from /proc/self/cgroup text."""
    places: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        for controller in controllers.split(",") if controllers else [""]:
            places[controller] = path
    return places


def parse_cgroup_mounts(mountinfo: str) -> list[tuple[str, str, frozenset[str]]]:
    """(root within the hierarchy, mount point, v1 controllers) of each cgroup mount in mountinfo text."""
    mounts = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        controllers = frozenset(tail[2].split(",")) & frozenset(CONTROLLERS) if tail[0] == "cgroup" else frozenset()
        mounts.append((fields[3].replace("\\040", " "), fields[4].replace("\\040", " "), controllers))
    return mounts


def cgroup_dirs_of(proc_cgroup: str, mountinfo: str) -> tuple[str, ...]:
    """Where this process's memory and pids cgroups are visible (writable) in its mount namespace."""
    own = parse_own_cgroups(proc_cgroup)
    dirs: list[str] = []
    for root, mount_point, controllers in parse_cgroup_mounts(mountinfo):
        wanted = [own.get(c) for c in controllers] if controllers else [own.get("")]
        for path in wanted:
            if path is not None and (path == root or path.startswith(root.rstrip("/") + "/")):
                where = os.path.normpath(os.path.join(mount_point, os.path.relpath(path, root)))
                if where not in dirs:
                    dirs.append(where)
    return tuple(dirs)


def read_small(path: str) -> bytes:
    """A cgroup file's bytes: open, read, close (no file object: its fstat, ioctl and lseeks are three times the
    calls, and these files are read several times per command)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        pieces = []
        while piece := os.read(fd, 65536):
            pieces.append(piece)
        return b"".join(pieces)
    finally:
        os.close(fd)


def own_cgroup_dirs() -> tuple[str, ...]:
    """The door's cgroup directories as this process sees them."""
    with open("/proc/self/cgroup") as cgroup, open("/proc/self/mountinfo") as mountinfo:
        return cgroup_dirs_of(cgroup.read(), mountinfo.read())


@dataclass(frozen=True)
class CommandCgroup:
    """The cgroup directories of one command (one per hierarchy)."""

    dirs: tuple[str, ...]

    @classmethod
    def create(cls, parents: tuple[str, ...], name: str) -> CommandCgroup:
        """Make `<parent>/<name>` in each hierarchy (OSError, and nothing left, when one cannot be made)."""
        made: list[str] = []
        try:
            for parent in parents:
                path = os.path.join(parent, name)
                os.mkdir(path, 0o755)
                made.append(path)
        except BaseException:
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            raise
        return cls(tuple(made))

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(os.path.join(path, "cgroup.procs") for path in self.dirs)

    def members(self) -> list[int]:
        """Every pid in the command's cgroups."""
        found: set[int] = set()
        for path in self.procs_files:
            with contextlib.suppress(FileNotFoundError):
                found.update(int(pid) for pid in read_small(path).split())
        return sorted(found)

    def signal_members(self, signum: int) -> int:
        """Send `signum` to every member, each through a pidfd checked against a second read of the members."""
        pidfds: dict[int, int] = {}
        try:
            for pid in self.members():
                with contextlib.suppress(ProcessLookupError):
                    pidfds[pid] = os.pidfd_open(pid)
            if not pidfds:
                return 0  # an empty cgroup (the usual end of a command): no second read
            still = set(self.members())
            sent = 0
            for pid, pidfd in pidfds.items():
                if pid in still:
                    with contextlib.suppress(ProcessLookupError):
                        signal.pidfd_send_signal(pidfd, signum)
                        sent += 1
            return sent
        finally:
            for pidfd in pidfds.values():
                os.close(pidfd)

    async def kill_all(self) -> None:
        """SIGKILL every member until none is left (a fork racing the kill is caught on the next round)."""
        delay = 0.001
        while self.signal_members(signal.SIGKILL):
            await trio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def oom_kills(self) -> int:
        """How many processes the memory controller killed in this cgroup (v1 memory.oom_control, v2
        memory.events)."""
        for path in self.dirs:
            for name, key in (("memory.oom_control", "oom_kill"), ("memory.events", "oom_kill")):
                with contextlib.suppress(OSError):
                    for line in read_small(os.path.join(path, name)).splitlines():
                        field, _, value = line.partition(b" ")
                        if field == key.encode():
                            return int(value)
        return 0

    def memory_peak_kb(self) -> int | None:
        """The most memory ever charged to the command's cgroup (its processes' pages and what they wrote to
        the scratch tmpfs), in KiB; None where the hierarchy does not say (v1 max_usage_in_bytes, v2 peak)."""
        for path in self.dirs:
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                with contextlib.suppress(OSError, ValueError):
                    return int(read_small(os.path.join(path, name))) // 1024
        return None

    def remove(self) -> None:
        """Remove the (empty) cgroup directories; EBUSY while a member is still exiting is retried by the caller."""
        for path in self.dirs:
            try:
                os.rmdir(path)
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    raise
