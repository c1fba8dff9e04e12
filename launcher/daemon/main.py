"""`sharness-launchd`: read the policy, sweep what dead sessions left, take the socket (systemd's, or its own),
tell systemd it is ready, serve until SIGTERM."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import socket
import stat
import sys

from launcher.daemon.policy import LaunchdPolicy, PolicyError
from launcher.daemon.policy_file import read_policy
from launcher.daemon.records import DaemonRecords, log_line
from launcher.daemon.systemd import ActivationError, Notifier, forget_activation, listen_fds, watchdog_interval_s
from pki.vocabulary import (
    EXIT_FAILED,
    EXIT_HASH_MISMATCH,
    EXIT_NOT_ROOT,
    EXIT_UNHELD,
    LAUNCHD_POLICY,
    LAUNCHD_SOCKET,
    LAUNCHD_STATE_ROOT,
    RUN_ROOT,
)

SOCKET_NAME = "launchd"  # FileDescriptorName= of systemd/sharness-launchd.socket
SOCKET_MODE = 0o666  # anyone may connect; the policy decides who may ask for what (docs/decisions/launchd.md)
BACKLOG = 64


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sharness-launchd", description="sharness-launch as a root service: "
                                     "people ask it for sessions over a Unix socket, within its policy.")
    parser.add_argument("--policy", default=LAUNCHD_POLICY, help=f"the policy file (default {LAUNCHD_POLICY})")
    parser.add_argument("--expect-policy-hash", metavar="sha256:HEX",
                        help="refuse to start unless the policy's canonical hash is this one")
    parser.add_argument("--socket", default=LAUNCHD_SOCKET,
                        help=f"where to listen when systemd passed no socket (default {LAUNCHD_SOCKET})")
    parser.add_argument("--state-dir", default=LAUNCHD_STATE_ROOT,
                        help=f"the daemon's audit logs and session owners (default {LAUNCHD_STATE_ROOT})")
    parser.add_argument("--request-deadline-s", type=float, default=None, help=argparse.SUPPRESS)  # tests
    return parser


def preload() -> None:
    """Import all a session needs before the first fork, so no runner pays for it (the daemon's whole point)."""
    import doors.serve
    import launcher.commands.run
    import launcher.kernel.probe
    import launcher.lifecycle.preflight
    import launcher.lifecycle.session
    import launcher.lifecycle.sweep
    import launcher.policy.approval
    import launcher.policy.plan
    import launcher.policy.plan_render  # noqa: F401

    doors.serve.preload()  # every door's code: a session imports only its own doors', here already imported


def _activated_listener() -> socket.socket | None:
    fds = listen_fds(os.environ, os.getpid())
    forget_activation(os.environ)
    if not fds:
        return None
    fd = fds.get(SOCKET_NAME, next(iter(fds.values())) if len(fds) == 1 else None)
    if fd is None:
        raise ActivationError(f"systemd passed {', '.join(fds)}, none named {SOCKET_NAME!r}")
    listener = socket.socket(fileno=fd)
    if listener.family != socket.AF_UNIX or listener.type != socket.SOCK_STREAM or \
            not listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        raise ActivationError(f"fd {fd} is not a listening AF_UNIX stream socket")
    return listener


def _own_listener(path: str) -> socket.socket:
    """Bind `path` (root's, SOCKET_MODE), replacing a stale socket no one listens on; refuse anything else there."""
    os.makedirs(os.path.dirname(path), mode=0o711, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ActivationError(f"{path} exists and is not a socket")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            raise ActivationError(f"another daemon listens on {path}")
        except ConnectionRefusedError:
            os.unlink(path)
        finally:
            probe.close()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old_umask = os.umask(0o177)  # never a moment when the socket is wider than root's before the chmod
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, SOCKET_MODE)
    listener.listen(BACKLOG)
    return listener


def _not_pinned(policy: LaunchdPolicy, expected: str | None) -> bool:
    """Whether `--expect-policy-hash` was given and `policy` is not the one it names."""
    return expected is not None and expected.lower() != policy.sha256


def main(argv: list[str] | None = None) -> int:
    """Run the daemon until SIGTERM; its exit code."""
    args = _parser().parse_args(argv)
    if os.geteuid() != 0:
        print("sharness-launchd: the daemon must run as root (it creates users, namespaces and cgroups)",
              file=sys.stderr)
        return EXIT_NOT_ROOT
    try:
        policy = read_policy(args.policy)
    except PolicyError as error:
        log_line("launchd.policy_refused", path=args.policy, pointer=error.pointer, message=error.message,
                 hint=error.hint)
        return EXIT_UNHELD
    if _not_pinned(policy, args.expect_policy_hash):
        log_line("launchd.policy_refused", path=args.policy, message="hash mismatch",
                 expected=args.expect_policy_hash, actual=policy.sha256)
        return EXIT_HASH_MISMATCH

    def read_again() -> LaunchdPolicy:
        """The policy for a reload: the same checks as at start; a pinned hash pins it for the daemon's life."""
        again = read_policy(args.policy)
        if _not_pinned(again, args.expect_policy_hash):
            raise PolicyError("", f"the policy's hash is now {again.sha256}, not the {args.expect_policy_hash} "
                              "the daemon was started with", "restart the daemon with the new --expect-policy-hash, "
                              "or put the pinned policy back")
        return again

    preload()
    from launcher.daemon.server import Daemon
    from launcher.lifecycle import sweep

    report = sweep.collect(wait=True)
    log_line("launchd.sweep", **report.to_json())
    try:
        listener = _activated_listener()
        activated = listener is not None
        listener = listener or _own_listener(args.socket)
    except (ActivationError, OSError) as exc:
        log_line("launchd.socket_refused", message=str(exc))
        return EXIT_FAILED
    notifier = Notifier(os.environ.pop("NOTIFY_SOCKET", None))
    watchdog = watchdog_interval_s(os.environ, os.getpid())
    records = DaemonRecords(args.state_dir)
    log_line("launchd.listening", socket=args.socket if not activated else "systemd", policy=policy.sha256,
             audit=records.audit.directory, activated=activated, run_root=RUN_ROOT)
    gc.freeze()  # what is imported now is shared with every runner's pages
    try:
        daemon = Daemon(listener, policy, records, notifier, watchdog, read_again)
        if args.request_deadline_s is not None:
            daemon.request_deadline_s = args.request_deadline_s
        return daemon.serve()
    finally:
        notifier.close()
        listener.close()
        if not activated:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(args.socket)
