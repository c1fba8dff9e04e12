"""The next command's zygote, made ahead: its cgroup and the confined process waiting in it; a command that takes
it gets its id and TMPDIR then.

Up to POOL wait. A request takes the oldest that has said READY (confined and waiting in recvmsg); a request
that finds none ready (all still starting: their ~15-25 ms start would be the command's wait) gets a zygote
forked there and then (the path of before zygotes made ahead), and the starting ones stay for the next. The door
makes one when it starts and fills the pool once a command's response went out, each
spawned as a fresh interpreter (doors/shell/_spawn.py says why). Ids are c1, c2, ... in the order commands take
their zygote; a zygote's cgroup is named by the order zygotes are made (`cmd-z<n>`), since a cgroup v2 directory
cannot be renamed. One that is never used is killed, reaped and its cgroup removed when the door stops; if the
door is killed instead, the launcher's removal of the shell's cgroup kills it with every other member
(launcher/kernel/cgroups.py) and the scratch goes with the session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from dataclasses import dataclass

from doors.shell._cgroup import CommandCgroup
from doors.shell._spawn import Zygote, fork_zygote, spawn_zygote, threads
from doors.shell._zygote import ZYGOTE_READY

# Zygotes kept waiting: two, so a command sent right after another (a Python agent's next call, ~1 ms after the
# last response) finds one ready while the one made after the last command still starts (its interpreter, then
# its cgroup join, which waits for an RCU grace period on cgroup v1: 15-25 ms together here). Each is one
# process of the shell's max_pids and ~4 MB of PSS (docs/decisions/shell.md).
POOL = 2


class NotSingleThreaded(RuntimeError):
    """The door has more than one thread: it forks nothing."""


@dataclass(frozen=True)
class Made:
    """A zygote waiting in a cgroup of its own, a pidfd on it: no command yet."""

    cgroup: CommandCgroup
    zygote: Zygote
    pidfd: int


@dataclass(frozen=True)
class Spare:
    """A zygote taken for a command: the command's id and TMPDIR, the zygote's cgroup and a pidfd on it."""

    command_id: str
    tmpdir: str
    cgroup: CommandCgroup
    zygote: Zygote
    pidfd: int


class Spares:
    """Makes, hands out and finally removes the door's waiting zygotes (at most POOL)."""

    def __init__(self, tmp: str, cgroups: tuple[str, ...], ruleset_fd: int) -> None:
        self._tmp = tmp
        self._cgroups = cgroups
        self._ruleset_fd = ruleset_fd
        self._made = 0  # zygotes made (their cgroups' names)
        self._taken = 0  # commands given one (their ids); a failed take takes none
        self._waiting: list[Made] = []  # oldest first

    def take(self) -> Spare:
        """A zygote for the next command: the oldest waiting one that said READY, else a new fork; OSError when
        its TMPDIR or cgroup cannot be made, NotSingleThreaded when the door may not fork."""
        for made in [made for made in self._waiting if _ended(made)]:
            self._waiting.remove(made)
            _remove(made)
        for made in self._waiting:
            if _announced(made):  # its READY is read now: it is handed out now
                self._waiting.remove(made)
                return self._assign(made)
        return self._assign(self._make(ahead=False))  # the rest are still starting: they stay for the next

    def refill(self, up_to: int = POOL) -> None:
        """Make zygotes until `up_to` wait. A failure stops there: the next take forks one and says why."""
        while len(self._waiting) < up_to:
            try:
                self._waiting.append(self._make(ahead=True))
            except (OSError, NotSingleThreaded):
                return

    def discard(self, spare: Spare) -> None:
        """Kill a taken zygote whose command did not start; reap it; remove its cgroup and TMPDIR."""
        _remove(Made(spare.cgroup, spare.zygote, spare.pidfd))
        shutil.rmtree(spare.tmpdir, ignore_errors=True)

    def close(self) -> None:
        """The door stops: the waiting zygotes go."""
        waiting, self._waiting = self._waiting, []
        for made in waiting:
            _remove(made)

    def _assign(self, made: Made) -> Spare:
        command_id = f"c{self._taken + 1}"
        tmpdir = os.path.join(self._tmp, command_id)
        try:
            os.mkdir(tmpdir, 0o700)
        except BaseException:
            _remove(made)
            raise
        self._taken += 1
        return Spare(command_id, tmpdir, made.cgroup, made.zygote, made.pidfd)

    def _make(self, *, ahead: bool) -> Made:
        if threads() != 1:
            raise NotSingleThreaded(f"the door has {threads()} threads")
        cgroup = CommandCgroup.create(self._cgroups, f"cmd-z{self._made + 1}")
        try:
            zygote = (spawn_zygote if ahead else fork_zygote)(cgroup.procs_files, self._ruleset_fd)
        except BaseException:
            cgroup.remove()
            raise
        self._made += 1
        return Made(cgroup, zygote, os.pidfd_open(zygote.pid))


def _remove(made: Made) -> None:
    """Kill a zygote no command runs in; reap it; remove its cgroup."""
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(made.pidfd, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(made.zygote.pid, 0)
    for fd in (made.pidfd, made.zygote.report):
        os.close(fd)
    made.zygote.control.close()
    with contextlib.suppress(OSError):
        made.cgroup.remove()


def _announced(made: Made) -> bool:
    """Whether the zygote said READY (the control socket is non-blocking; a spawned zygote says it once)."""
    try:
        return made.zygote.control.recv(len(ZYGOTE_READY)) == ZYGOTE_READY
    except OSError:  # not yet (BlockingIOError), or it is gone: the launch finds out, and its report says why
        return False


def _ended(made: Made) -> bool:
    """Whether the zygote has already exited (killed while it waited, or its setup failed)."""
    with contextlib.suppress(ChildProcessError):
        return os.waitid(os.P_PIDFD, made.pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    return True
