"""The door's start-up self-test: before it listens, it runs one command exactly as it would run any.

A door that cannot make a command's cgroup, enter its Landlock layer, or fork from a single thread does not
start (its fatal message names the step), so no command ever runs less confined than the manifest says.
It forks its probe's zygote (the on-demand path); a zygote spawned ahead takes the same steps (doors/shell/
_zygote.py), and one that fails them has exited before it is taken (a fork replaces it) or reports the step (its
command is not run): probing that path too would add
an interpreter start (~45 ms here) to every session's start.
"""

from __future__ import annotations

import os

from doors.shell._cgroup import CommandCgroup
from doors.shell._spawn import Launch, fork_zygote, read_report, send_launch, threads

PROBE = "/bin/true"


class SelfTestFailed(RuntimeError):
    """A step of the self-test failed: the door does not start."""


def self_test(cgroups: tuple[str, ...], ruleset_fd: int, cwd: str) -> None:
    """Run PROBE through the door's own start path; raise SelfTestFailed naming what failed."""
    if threads() != 1:
        raise SelfTestFailed(f"the door has {threads()} threads: a command is forked only from one")
    try:
        cgroup = CommandCgroup.create(cgroups, "cmd-selftest")
    except OSError as exc:
        raise SelfTestFailed(f"cannot make a command cgroup under {cgroups}: {exc.strerror} (the launcher "
                             "delegates the shell's cgroup to its user)") from exc
    cwd_fd = os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        zygote = fork_zygote(cgroup.procs_files, ruleset_fd)
        send_launch(zygote, Launch((PROBE,), {"PATH": "/usr/bin:/bin"}, cwd_fd, (null, null, null)))
        with os.fdopen(zygote.report, "rb") as pipe:
            failure = read_report(pipe.read())
        _, status = os.waitpid(zygote.pid, 0)
    finally:
        os.close(cwd_fd)
        os.close(null)
        cgroup.remove()
    if failure is not None:
        raise SelfTestFailed(f"a command could not be confined: step {failure.step!r}: {os.strerror(failure.errno)}")
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise SelfTestFailed(f"{PROBE} did not exit 0 under the command's confinement (wait status {status})")
