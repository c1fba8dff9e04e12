"""The door's start-up self-test: before it listens, it runs one command exactly as it would run any.

A door that cannot make a command's cgroup, enter its Landlock layer, or fork from a single thread does not
start (its fatal message names the step), so no command ever runs less confined than the manifest says.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from doors.shell._cgroup import CommandCgroup
from doors.shell._spawn import Launch, Zygote, fork_zygote, read_report, send_launch, spawn_zygote, threads

PROBE = "/bin/true"


class SelfTestFailed(RuntimeError):
    """A step of the self-test failed: the door does not start."""


def self_test(cgroups: tuple[str, ...], ruleset_fd: int, cwd: str) -> None:
    """Run PROBE through both of the door's start paths (a zygote spawned ahead, one forked on demand); raise
    SelfTestFailed naming what failed."""
    if threads() != 1:
        raise SelfTestFailed(f"the door has {threads()} threads: a command is forked only from one")
    for make in (spawn_zygote, fork_zygote):
        _probe(cgroups, ruleset_fd, cwd, make)


def _probe(cgroups: tuple[str, ...], ruleset_fd: int, cwd: str, make: Callable[[tuple[str, ...], int], Zygote]) -> None:
    try:
        cgroup = CommandCgroup.create(cgroups, "cmd-selftest")
    except OSError as exc:
        raise SelfTestFailed(f"cannot make a command cgroup under {cgroups}: {exc.strerror} (the launcher "
                             "delegates the shell's cgroup to its user)") from exc
    cwd_fd = os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        zygote = make(cgroup.procs_files, ruleset_fd)
        send_launch(zygote, Launch((PROBE,), {"PATH": "/usr/bin:/bin"}, cwd_fd, (null, null, null)))
        with os.fdopen(zygote.report, "rb") as pipe:
            failure = read_report(pipe.read())
        _, status = os.waitpid(zygote.pid, 0)
    finally:
        os.close(cwd_fd)
        os.close(null)
        cgroup.remove()
    if failure is not None:
        raise SelfTestFailed(f"a command could not be confined ({make.__name__}): step {failure.step!r}: {os.strerror(failure.errno)}")
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise SelfTestFailed(f"{PROBE} did not exit 0 under the command's confinement (wait status {status})")
