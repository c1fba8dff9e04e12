"""The app's fds 0, 1 and 2: the slave of the launcher's pty where the launcher's fd is a terminal
(launcher/lifecycle/ptyrelay.py), a pipe the launcher copies everywhere else (launcher/lifecycle/piperelay.py).
Never one of the launcher's own fds: what the app writes reaches the person only through the launcher."""

from __future__ import annotations

import os

from launcher.lifecycle.piperelay import PipeRelay
from launcher.lifecycle.ptyrelay import PtyRelay, piped_stdio


class AppStdio:
    """Both relays as one source for the supervisor's loop (its IoSource), and one end."""

    def __init__(self, pty: PtyRelay | None, pipes: PipeRelay) -> None:
        self._pty = pty
        self._pipes = pipes
        self._relays: tuple[PtyRelay | PipeRelay, ...] = (pipes,) if pty is None else (pty, pipes)
        self._owners: dict[int, PtyRelay | PipeRelay] = {}

    @classmethod
    def open(cls, launcher_fds: tuple[int, int, int] = (0, 1, 2)) -> AppStdio:
        """A pty for the launcher's terminal fds (if any), a pipe for each other one."""
        pty = PtyRelay.open(launcher_fds)
        try:
            pipes = PipeRelay.open(piped_stdio([os.isatty(fd) for fd in launcher_fds]), launcher_fds)
        except BaseException:
            if pty is not None:
                pty.close()
            raise
        return cls(pty, pipes)

    def app_stdio(self) -> dict[int, int]:
        """Target fd → fd for spawn_app: the pty's slave or a pipe's end, for each of 0, 1, 2."""
        stdio = self._pty.app_stdio() if self._pty is not None else {}
        stdio.update(self._pipes.app_stdio())
        return stdio

    def child_setup(self) -> None:
        """In the app's child, confined, before execve: the pty (if any) becomes its controlling terminal."""
        if self._pty is not None:
            self._pty.child_setup()

    def app_started(self) -> None:
        """In the launcher once the app is forked: drop the app's ends of the pty and the pipes."""
        if self._pty is not None:
            self._pty.app_started()
        self._pipes.app_started()

    def fds_to_watch(self) -> dict[int, int]:
        """fd → events both relays wait for now (their fds never overlap: a terminal is the pty's alone)."""
        wanted: dict[int, int] = {}
        self._owners = {}
        for relay in self._relays:
            for fd, events in relay.fds_to_watch().items():
                wanted[fd] = events
                self._owners[fd] = relay
        return wanted

    def on_ready(self, fd: int, events: int) -> None:
        owner = self._owners.get(fd)
        if owner is not None:
            owner.on_ready(fd, events)

    def on_signal(self, signum: int) -> None:
        if self._pty is not None:
            self._pty.on_signal(signum)

    def say(self, line: str) -> None:
        """One line of the launcher's while the app runs, where its stderr goes: the pty when that is a terminal,
        else into the stderr pipe's stream."""
        if self._pty is not None and 2 in self._pty.plan.to_slave:
            self._pty.say(line)
        else:
            self._pipes.say(line)

    def close(self, end_lines_on: frozenset[int] = frozenset({2})) -> None:
        """Drain both (the app is gone), restore the person's terminal, end lines the launcher writes after."""
        try:
            if self._pty is not None:
                self._pty.close()
        finally:
            self._pipes.close(end_lines_on)

    @property
    def pty(self) -> PtyRelay | None:
        return self._pty
