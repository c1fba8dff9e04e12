"""The next command's zygote, made ahead: its id, its TMPDIR, its cgroup, and the confined process waiting in it.

At most one waits. A request takes it (or, when none waits, one is forked then: the slow path, as before
zygotes) and the door makes the next once that command's response went out, spawned as a fresh interpreter
(doors/shell/_spawn.py says why). One that is never used is killed, reaped and its cgroup and
TMPDIR removed when the door stops; if the door is killed instead, the launcher's removal of the shell's cgroup
kills it with every other member (launcher/kernel/cgroups.py) and the scratch goes with the session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from dataclasses import dataclass

from doors.shell._cgroup import CommandCgroup
from doors.shell._spawn import Zygote, fork_zygote, spawn_zygote, threads


class NotSingleThreaded(RuntimeError):
    """The door has more than one thread: it forks nothing."""


@dataclass(frozen=True)
class Spare:
    """A zygote with what is its own: the id its command will have, its TMPDIR and cgroup, a pidfd on it."""

    command_id: str
    tmpdir: str
    cgroup: CommandCgroup
    zygote: Zygote
    pidfd: int


class Spares:
    """Makes, hands out and finally removes the door's waiting zygote."""

    def __init__(self, tmp: str, cgroups: tuple[str, ...], ruleset_fd: int) -> None:
        self._tmp = tmp
        self._cgroups = cgroups
        self._ruleset_fd = ruleset_fd
        self._count = 0  # ids are c1, c2, ... in the order commands are taken; a failed make takes none
        self._waiting: Spare | None = None

    def take(self) -> Spare:
        """The waiting zygote if it is still alive, else a new one; OSError when its TMPDIR or cgroup cannot be
        made, NotSingleThreaded when the door may not fork."""
        spare, self._waiting = self._waiting, None
        if spare is not None and not _ended(spare):
            return spare
        if spare is not None:
            self.discard(spare)
        return self._make(ahead=False)

    def refill(self) -> None:
        """Make the next zygote when none waits. A failure leaves none: the next take makes one and says why."""
        if self._waiting is None:
            with contextlib.suppress(OSError, NotSingleThreaded):
                self._waiting = self._make(ahead=True)

    def discard(self, spare: Spare) -> None:
        """Kill an unused zygote; reap it; remove its cgroup and TMPDIR."""
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(spare.pidfd, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(spare.zygote.pid, 0)
        for fd in (spare.pidfd, spare.zygote.report):
            os.close(fd)
        spare.zygote.control.close()
        with contextlib.suppress(OSError):
            spare.cgroup.remove()
        shutil.rmtree(spare.tmpdir, ignore_errors=True)

    def close(self) -> None:
        """The door stops: the waiting zygote, if any, goes."""
        spare, self._waiting = self._waiting, None
        if spare is not None:
            self.discard(spare)

    def _make(self, *, ahead: bool) -> Spare:
        if threads() != 1:
            raise NotSingleThreaded(f"the door has {threads()} threads")
        command_id = f"c{self._count + 1}"
        tmpdir = os.path.join(self._tmp, command_id)
        os.mkdir(tmpdir, 0o700)
        try:
            cgroup = CommandCgroup.create(self._cgroups, f"cmd-{command_id}")
        except BaseException:
            os.rmdir(tmpdir)
            raise
        try:
            zygote = (spawn_zygote if ahead else fork_zygote)(cgroup.procs_files, self._ruleset_fd)
        except BaseException:
            cgroup.remove()
            os.rmdir(tmpdir)
            raise
        self._count += 1
        return Spare(command_id, tmpdir, cgroup, zygote, os.pidfd_open(zygote.pid))


def _ended(spare: Spare) -> bool:
    """Whether the zygote has already exited (killed while it waited, or its setup failed)."""
    with contextlib.suppress(ChildProcessError):
        return os.waitid(os.P_PIDFD, spare.pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    return True
