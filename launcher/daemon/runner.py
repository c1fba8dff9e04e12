"""One session of the daemon's, in a child forked from it: the caller's fds become 0, 1 and 2, and the child
runs `sharness-launch run` itself (launcher/commands/run.py): the same gate, the same session, the same pty
relay and screen filter, the same words on the caller's stderr as a person running the launcher with sudo sees.
The daemon has paid the imports already, so the child starts at the gate.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Sequence

from pki.vocabulary import EXIT_FAIL_CLOSED

_PR_SET_PDEATHSIG = 1
_RESET_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD, signal.SIGWINCH)


def _die_with_the_daemon() -> None:
    # A daemon SIGKILLed leaves no one to give the caller its exit code: its sessions end with it, and the
    # next start's sweep removes what they left (docs/decisions/launchd.md).
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(EXIT_FAIL_CLOSED)


def _take_stdio(stdio: Sequence[int]) -> None:
    for target, fd in enumerate(stdio):
        os.dup2(fd, target, inheritable=True)
    for fd in stdio:
        if fd > 2:
            os.close(fd)


def _close_all_but(keep: set[int]) -> None:
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _manifest_memfd(manifest: bytes) -> int:
    fd = os.memfd_create("sharness-launchd-manifest", os.MFD_CLOEXEC)
    view = memoryview(manifest)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _journaled_reporter(report_fd: int) -> Callable[[str], None]:
    def report(sid: str) -> None:
        with contextlib.suppress(OSError):  # the daemon gone: the session still runs to its end
            os.write(report_fd, sid.encode() + b"\n")
    return report


def run_session(stdio: Sequence[int], manifest: bytes, expect_hash: str, report_fd: int, *, best_effort: bool,
                summary_json: bool, caller_uid: int, close_daemon: Callable[[], None]) -> None:
    """In the forked child: drop the daemon's fds, take the caller's, run the launcher, exit. Never returns."""
    code = EXIT_FAIL_CLOSED
    try:
        close_daemon()
        signal.set_wakeup_fd(-1)
        for signum in _RESET_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        _die_with_the_daemon()
        os.setsid()
        _take_stdio(stdio)
        _close_all_but({report_fd})
        memfd = _manifest_memfd(manifest)
        from launcher.commands.run import run

        args = argparse.Namespace(manifest=f"/proc/self/fd/{memfd}", expect_hash=expect_hash, best_effort=best_effort,
                                  audit_dir=None, json=summary_json, via_daemon=False,
                                  on_journaled=_journaled_reporter(report_fd), caller_uid=caller_uid)
        code = run(args)
    except BaseException as exc:  # the child must never return into the daemon's loop
        with contextlib.suppress(Exception):
            print(f"sharness-launch: the daemon's session runner failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
