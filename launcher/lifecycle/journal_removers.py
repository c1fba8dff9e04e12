"""Removers of journal entries, and process identity: each removal is idempotent (gone is success).

`dir`, `file` and `svid` removals stay inside the sharness roots and never follow a symlink (a tree is removed
iteratively through directory fds: launcher/lifecycle/tree_removal.py); `pid` kills only the very process
recorded (pid and start time), through a pidfd.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import signal
import stat
from collections.abc import Callable, Sequence

from launcher.lifecycle.tree_removal import remove_tree
from pki.vocabulary import REMOVABLE_ROOTS, SESSIONS_ROOT

KILL_WAIT_SECONDS = 5.0

_PROCESS = re.compile(r"^([1-9][0-9]*):([0-9]+)$")

Remover = Callable[[str], None]


class RemovalRefused(Exception):
    """A removal the journal will not do (outside the roots, a symlink, init): the detail says why."""


def parse_process(name: str) -> tuple[int, int]:
    """`"<pid>:<starttime>"` -> (pid, starttime)."""
    match = _PROCESS.match(name)
    if not match:
        raise RemovalRefused(f"process name must be '<pid>:<starttime>', got {name!r}")
    return int(match.group(1)), int(match.group(2))


def parse_starttime(stat_bytes: bytes) -> int:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot); the command name may hold spaces and ')'."""
    fields = stat_bytes[stat_bytes.rindex(b")") + 2 :].split()
    return int(fields[19])


def check_path(path: str, roots: Sequence[str], protected: Sequence[str]) -> str:
    """The allowed root holding `path` strictly inside it; RemovalRefused otherwise."""
    if not path.startswith("/") or os.path.normpath(path) != path:
        raise RemovalRefused(f"refusing {path!r}: not an absolute normalised path")
    for guarded in protected:
        if guarded == path or guarded.startswith(path + "/"):
            raise RemovalRefused(f"refusing {path!r}: it holds the session journals ({guarded})")
    for root in roots:
        if path.startswith(root.rstrip("/") + "/"):
            return root.rstrip("/")
    raise RemovalRefused(f"refusing {path!r}: outside the sharness roots {', '.join(roots)}")


# --- processes ----------------------------------------------------------------------------------------


def process_starttime(pid: int) -> int | None:
    """The start time of process `pid`, or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return parse_starttime(f.read())
    except (FileNotFoundError, ProcessLookupError):
        return None


def process_name(pid: int | None = None) -> str:
    """`"<pid>:<starttime>"` naming this process (or `pid`) for as long as it lives."""
    pid = os.getpid() if pid is None else pid
    start = process_starttime(pid)
    if start is None:
        raise ProcessLookupError(f"no process {pid}")
    return f"{pid}:{start}"


def process_alive(name: str) -> bool:
    """Whether the process `"<pid>:<starttime>"` still runs (a zombie counts as dead)."""
    pid, start = parse_process(name)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_bytes = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat_bytes[stat_bytes.rindex(b")") + 2 :].split()[0]
    return parse_starttime(stat_bytes) == start and state not in (b"Z", b"X")


# --- removers -----------------------------------------------------------------------------------------


def remove_pid(name: str) -> None:
    """SIGKILL `"<pid>:<starttime>"` if that very process still lives, and wait until it has exited."""
    pid, start = parse_process(name)
    if pid in (1, os.getpid()):
        raise RemovalRefused(f"refusing to kill pid {pid}: it is init or this launcher")
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        # The pidfd pins the process: if the start time matches now, the signal reaches that process.
        if process_starttime(pid) != start:
            return
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(int(KILL_WAIT_SECONDS * 1000)):
            raise RemovalRefused(f"process {pid} still runs {KILL_WAIT_SECONDS:.0f} s after SIGKILL")
    finally:
        os.close(pidfd)


def _open_parent(path: str, roots: Sequence[str], protected: Sequence[str]) -> tuple[int, str] | None:
    """An fd on the parent of `path`, reached without following any symlink below the root; None if gone."""
    root = check_path(path, roots, protected)
    parts = path[len(root) + 1 :].split("/")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        for part in parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return None
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    detail = f"refusing {path!r}: {part!r} is a symlink or not a directory"
                    raise RemovalRefused(detail) from exc
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def remove_dir(
    path: str, roots: Sequence[str] = REMOVABLE_ROOTS, protected: Sequence[str] = (SESSIONS_ROOT,)
) -> None:
    """Remove the directory tree `path` through directory fds; a symlink is never followed."""
    opened = _open_parent(path, roots, protected)
    if opened is None:
        return
    parent_fd, base = opened
    try:
        try:
            mode = os.lstat(base, dir_fd=parent_fd).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(mode):
            raise RemovalRefused(f"refusing {path!r}: the journal says directory, it is not one (a symlink?)")
        remove_tree(parent_fd, base)
    finally:
        os.close(parent_fd)


def _unlink(path: str, roots: Sequence[str], protected: Sequence[str], *, directory_ok: bool) -> None:
    """Unlink `path` through its parent's fd (a symlink there is unlinked, never followed)."""
    opened = _open_parent(path, roots, protected)
    if opened is None:
        return
    parent_fd, base = opened
    try:
        os.unlink(base, dir_fd=parent_fd)
    except FileNotFoundError:
        return
    except IsADirectoryError as exc:
        if directory_ok:
            return
        raise RemovalRefused(f"refusing {path!r}: the journal says file, it is a directory") from exc
    finally:
        os.close(parent_fd)


def remove_file(
    path: str, roots: Sequence[str] = REMOVABLE_ROOTS, protected: Sequence[str] = (SESSIONS_ROOT,)
) -> None:
    """Unlink the file or socket `path` (a symlink there is unlinked, never followed)."""
    _unlink(path, roots, protected, directory_ok=False)


def remove_svid(
    path: str, roots: Sequence[str] = REMOVABLE_ROOTS, protected: Sequence[str] = (SESSIONS_ROOT,)
) -> None:
    """Unlink the SVID file `path` (the app's key) on its own, before any tree is removed; a directory the app
    put in its place is left to the tree removal that follows."""
    _unlink(path, roots, protected, directory_ok=True)


def _remove_user(name: str) -> None:
    from launcher.kernel.users import delete_user  # lazy: only teardown and gc need it

    delete_user(name)


def _remove_group(name: str) -> None:
    from launcher.kernel.users import delete_group

    delete_group(name)


def _remove_netns(name: str) -> None:
    from launcher.kernel.netns import delete_netns

    delete_netns(name)


def _remove_cgroup(name: str) -> None:
    from launcher.kernel.cgroups import delete_cgroup

    delete_cgroup(name)


def removers_for(roots: Sequence[str], protected: Sequence[str] = (SESSIONS_ROOT,)) -> dict[str, Remover]:
    """The remover of every kind, with `dir`/`file` confined to `roots` and never touching `protected`."""
    roots, protected = tuple(roots), tuple(protected)
    return {
        "user": _remove_user,
        "group": _remove_group,
        "netns": _remove_netns,
        "cgroup": _remove_cgroup,
        "dir": lambda path: remove_dir(path, roots, protected),
        "file": lambda path: remove_file(path, roots, protected),
        "svid": lambda path: remove_svid(path, roots, protected),
        "pid": remove_pid,
    }

