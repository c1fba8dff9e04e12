"""The init of the app's pid namespace: pid 1, a forked copy of the launcher that starts the app and waits.

spawn.spawn_app forks it as pid 1 of a new namespace (kernel/pidns.py). As root it arms its parent-death
signal, blocks the signals it waits for and forks the app (pid 2), which confines itself exactly as an app
always has. Then it confines itself (`init_spec`): the app's uid and network namespace, a private root
holding nothing, Landlock granting nothing, the app's seccomp list, and no cgroup of the app's, so it is
never the victim of the app's OOM kill and costs no pid of the app's budget. Then it waits: SIGCHLD reaps
every child (the app's orphans are re-parented to it); SIGTERM, SIGINT and SIGHUP sent from outside the
namespace (the launcher; the app is kept from signalling it by Landlock's scoping) are passed on to the app.
Once the app is reaped it writes the app's wait status to its report pipe and exits with the app's exit
code, and the kernel kills whatever the app left in the namespace. When the launcher dies, the init gets
SIGKILL (its parent-death signal) and the namespace goes with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn

from launcher.kernel.confine import ConfinementError, ConfinementSpec, apply_confinement, arm_parent_death_signal
from launcher.kernel.landlock import LandlockRules
from launcher.kernel.mountns import Bind

INIT_PID = 1
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
WAITED = {signal.SIGCHLD, *FORWARDED}
_REPORT_BYTES = 4


def init_spec(app: ConfinementSpec, launcher_pidfd: int, report_fd: int,
              binary: str | None = None) -> ConfinementSpec:
    """The init's confinement, from the app's: its uid, netns and seccomp list, nothing else (no scratch
    tmpfs: its root holds nothing to mount it on). With the compiled init `binary`, its root holds that one
    file, read-only, and Landlock lets it execute that file and nothing else. Pure."""
    # Signal scoping off: the app (its own Landlock domain) is outside the init's, and the init must signal
    # it. What the init may signal is bounded by its namespace and its uid, which are the app's.
    execs = (binary,) if binary is not None else ()
    nothing = LandlockRules(exec=execs, scope_signals=False, scope_abstract_unix=True) \
        if app.landlock is not None else None
    return replace(
        app, groups=(), cgroup=None, landlock=nothing, seccomp_deny_inet=True, seccomp_allow_udp=False,
        seccomp_extra=(), keep_fds=(report_fd,), env={}, cwd="/", mount_keep=tuple(Bind(path) for path in execs),
        scratch=None, parent_pid=None, parent_pidfd=launcher_pidfd, workspace_mount=None,
    )


def run_init(start_app: Callable[[], NoReturn], spec: ConfinementSpec, report_fd: int,
             binary: str | None = None) -> NoReturn:
    """In the fresh namespace's pid 1, as root: fork the app (`start_app` confines and execs it), confine
    this process with `spec` (from init_spec), wait for the app, report its status and exit with its code.

    With the compiled init `binary` (the one init_spec granted), it execs that to wait.
    Raises ConfinementError when the init cannot start or confine itself (the app, if forked, dies with it).
    """
    arm_parent_death_signal(None, spec.parent_pidfd)
    signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
    try:
        app_pid = os.fork()
    except OSError as exc:
        raise ConfinementError("pidns", f"the pid namespace's init cannot fork the app: {exc.strerror}") from exc
    if app_pid == 0:
        start_app()
    devnull = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    apply_confinement(replace(spec, keep_fds=(*spec.keep_fds, devnull)))
    for fd in (0, 1, 2):  # the init holds nothing of the person's terminal or of the app's stdio
        os.dup2(devnull, fd)
    os.close(devnull)
    if binary is not None:  # the same loop, without this copy of the launcher's pages
        os.set_inheritable(report_fd, True)
        os.execv(binary, [binary, str(app_pid), str(report_fd)])
    status = _wait_for(app_pid)
    with contextlib.suppress(OSError):  # the launcher is gone: nobody to tell
        os.write(report_fd, status.to_bytes(_REPORT_BYTES, "little"))
    os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def _wait_for(app_pid: int) -> int:
    """Reap every child until the app is reaped; pass on what the launcher sends. The app's wait status."""
    while True:
        info = signal.sigwaitinfo(WAITED)
        if info.si_signo != signal.SIGCHLD:
            if info.si_pid == 0:  # sent from outside this namespace, where only the launcher may reach it
                with contextlib.suppress(ProcessLookupError):
                    os.kill(app_pid, info.si_signo)
            continue
        status = _reap(app_pid)
        if status is not None:
            return status


def _reap(app_pid: int) -> int | None:
    """waitpid every child that has ended (SIGCHLDs coalesce); the app's status if it was among them."""
    app_status = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return app_status
        if pid == 0:
            return app_status
        if pid == app_pid:
            app_status = status


def reported_status(report_fd: int, init_status: int) -> int:
    """In the launcher, once the init is reaped: the app's wait status as the init reported it, else the
    init's own (it was killed, or failed before the app ended). Closes `report_fd`."""
    try:
        report = os.read(report_fd, _REPORT_BYTES + 1)
    except OSError:
        report = b""
    finally:
        os.close(report_fd)
    if len(report) != _REPORT_BYTES:
        return init_status
    status = int.from_bytes(report, "little")
    return status if os.WIFEXITED(status) or os.WIFSIGNALED(status) else init_status
