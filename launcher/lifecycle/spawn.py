"""Fork one component, confine it in the child, and run it: a door in the pre-imported interpreter,
the app through execve, as pid 2 of a pid namespace of its own whose init (app_init.py) is the launcher's
child. The parent keeps only the pid, a pidfd and its end of the status socket (the init's report pipe)."""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NoReturn

from launcher.kernel import pidns
from launcher.kernel.confine import ConfinementError, ConfinementSpec, apply_confinement, place_fds, step_of_exit_code
from launcher.kernel.init_binary import usable_init_binary
from launcher.lifecycle import app_init
from pki.vocabulary import (
    DOOR_ORDER,
    EXIT_CONFINEMENT_FAILED,
    EXIT_DOOR_CRASHED,
    EXIT_EXEC_FAILED,
    EXIT_SIGNAL_BASE,
    STATUS_FD,
    child_exit_meaning,
)

if TYPE_CHECKING:
    from doors import DoorContract


@dataclass(frozen=True)
class Spawned:
    role: str
    pid: int
    pidfd: int
    status: socket.socket | None  # door → launcher messages; None for the app
    diagnostics: int | None = None  # the read end of a door's stderr (non-blocking); None for the app
    exit_report: int | None = None  # the app's init reports the app's wait status here (app_init.py)


def import_door_code(roles: Iterable[str], mount: bool = False) -> None:
    """The launcher is its doors' zygote: the code of the doors among `roles` (no other door's; the fs door's FUSE
    front only with `mount`) imported before they fork, then frozen: the forked doors share these pages and the
    launcher's exit does not walk them (docs/decisions/session-bench.md). A session runs this while its CA child
    mints (docs/decisions/bench.md)."""
    wanted, collecting = set(roles), gc.isenabled()
    gc.disable()  # no collector passes over a heap that only grows here: ~9 ms of CPU (docs/decisions/bench.md)
    try:
        from doors.serve import preload

        preload((role for role in DOOR_ORDER if role in wanted), mount)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def door_main(contract: DoorContract) -> None:
    """Run the door `contract` describes, in the forked child, from the code import_door_code loaded."""
    from doors.serve import serve

    serve(contract)


def _reset_signals(for_exec: bool) -> None:
    """The launcher's signal handlers and wake-up fd must not leak into a child (trio installs its own).

    A door keeps running Python, so it gets Python's start-up dispositions (SIGPIPE ignored, SIGINT raising
    KeyboardInterrupt); a program about to be exec'd gets the defaults, as subprocess does.
    """
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL if for_exec else signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_DFL if for_exec else signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _child_fail(role: str, code: int, detail: str, prefixed: bool = True) -> NoReturn:
    try:
        os.write(2, (f"sharness-launch: {role}: {detail}\n" if prefixed else f"{detail}\n").encode(errors="replace"))
    finally:
        os._exit(code)


def spawn_door(
    role: str,
    spec: ConfinementSpec,
    fds: Mapping[int, int],
    run: Callable[[], None],
) -> Spawned:
    """Fork a door: place its fd contract, confine it, run it.

    This function makes the status socketpair (fd 3) and the stderr pipe (fd 2): a door never writes to the
    person's terminal; the launcher reads what it writes there and shows it bounded and inert.
    """
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    diagnostics, door_stderr = os.pipe2(os.O_CLOEXEC)
    mapping = {2: door_stderr, STATUS_FD: child_end.fileno(), **fds}
    pid = os.fork()
    if pid == 0:  # child
        try:
            _reset_signals(for_exec=False)
            parent_end.close()
            os.close(diagnostics)
            place_fds({0: os.open("/dev/null", os.O_RDONLY), 1: os.open("/dev/null", os.O_WRONLY), **mapping})
            apply_confinement(spec)
        except ConfinementError as exc:
            _child_fail(role, exc.exit_code, f"confinement failed at step {exc.step}: {exc.detail}", False)
        except BaseException as exc:
            _child_fail(role, EXIT_CONFINEMENT_FAILED, f"confinement failed: {exc!r}", False)
        try:
            run()
        except SystemExit as exc:
            # A door's run_reporting has sent its reason as `fatal` on the status fd; repeating
            # "SystemExit: 1" here would only hide it.
            if isinstance(exc.code, int) or exc.code is None:
                os._exit(EXIT_DOOR_CRASHED if exc.code else 0)
            _child_fail(role, EXIT_DOOR_CRASHED, f"door crashed: {exc.code}", False)
        except BaseException as exc:
            _child_fail(role, EXIT_DOOR_CRASHED, f"door crashed: {type(exc).__name__}: {exc}", False)
        os._exit(0)
    child_end.close()
    os.close(door_stderr)
    os.set_blocking(diagnostics, False)
    return Spawned(role=role, pid=pid, pidfd=os.pidfd_open(pid), status=parent_end, diagnostics=diagnostics)


def spawn_app(
    argv: tuple[str, ...],
    spec: ConfinementSpec,
    stdio: Mapping[int, int],
    child_setup: Callable[[], None] | None = None,
) -> Spawned:
    """Fork the app's pid namespace init (launcher/lifecycle/app_init.py), which forks the app, confined by
    `spec`, to execve its argv with the clean environment of `spec`.

    `child_setup` runs in the app once it is confined, just before execve (the pty relay's TIOCSCTTY). The
    Spawned is the init's: its pidfd, and the pipe on which it reports the app's wait status.
    """
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    launcher_pidfd = os.pidfd_open(os.getpid())
    binary = usable_init_binary()
    try:
        pid = pidns.fork_into_new_pid_namespace()
    except OSError as exc:
        for fd in (report_r, report_w, launcher_pidfd):
            os.close(fd)
        raise RuntimeError(f"the app's pid namespace cannot be made: {exc.strerror}") from exc
    if pid == 0:  # pid 1 of the app's namespace
        try:
            _reset_signals(for_exec=True)
            os.close(report_r)
            app_spec = replace(spec, parent_pid=app_init.INIT_PID)
            app_init.run_init(lambda: _run_app(argv, app_spec, stdio, child_setup),
                              app_init.init_spec(spec, launcher_pidfd, report_w, binary), report_w, binary)
        except ConfinementError as exc:
            _child_fail("app", exc.exit_code, f"its pid namespace's init failed at step {exc.step}: {exc.detail}")
        except BaseException as exc:
            _child_fail("app", EXIT_CONFINEMENT_FAILED, f"its pid namespace's init failed: {exc!r}")
    os.close(report_w)
    os.close(launcher_pidfd)
    return Spawned(role="app", pid=pid, pidfd=os.pidfd_open(pid), status=None, exit_report=report_r)


def _run_app(
    argv: tuple[str, ...], spec: ConfinementSpec, stdio: Mapping[int, int], child_setup: Callable[[], None] | None,
) -> NoReturn:
    """In the app's process (pid 2, still root): confine it and execve its argv."""
    try:
        _reset_signals(for_exec=True)
        place_fds(dict(stdio))
        apply_confinement(spec)
        if child_setup is not None:
            child_setup()
    except ConfinementError as exc:
        _child_fail("app", exc.exit_code, f"confinement failed at step {exc.step}: {exc.detail}")
    except BaseException as exc:
        _child_fail("app", EXIT_CONFINEMENT_FAILED, f"confinement failed: {exc!r}")
    try:
        os.execvpe(argv[0], list(argv), dict(spec.env))
    except OSError as exc:
        detail = f"cannot execute {argv[0]!r}: {exc.strerror} (check app.argv and app.files.exec)"
        _child_fail("app", EXIT_EXEC_FAILED, detail)
    os._exit(EXIT_EXEC_FAILED)


def exit_code_of(wait_status: int) -> int:
    """Shell convention: the exit code, or 128 + the signal that ended the process."""
    if os.WIFSIGNALED(wait_status):
        return EXIT_SIGNAL_BASE + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def describe_exit(role: str, wait_status: int) -> str:
    if os.WIFSIGNALED(wait_status):
        return f"{role} was killed by signal {os.WTERMSIG(wait_status)}"
    code = os.WEXITSTATUS(wait_status)
    step = step_of_exit_code(code)
    if step is not None:
        return f"{role} exited with code {code} (its confinement failed at step {step!r})"
    meaning = child_exit_meaning(code)
    return f"{role} exited with code {code}" + (f" ({meaning})" if meaning else "")


def single_threaded() -> bool:
    """fork() is only safe here while the launcher has one thread."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return sys.platform != "linux"
