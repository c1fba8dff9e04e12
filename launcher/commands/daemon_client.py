"""The client side of sharness-launchd: `sharness-launch MANIFEST --expect-hash …` as a person (not root) when
the daemon's socket is there, and `ps`, `stop`, `logs`. The app gets this process's own stdin, stdout and
stderr (passed as SCM_RIGHTS); the daemon's words arrive as frames, its session's on the caller's stderr."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import termios
from typing import Any

from launcher.daemon.protocol import FrameReader, ProtocolError, encode_frame, run_message
from launcher.daemon.wire import read_frame, send_frame
from pki.vocabulary import EXIT_FAIL_CLOSED, EXIT_UNAVAILABLE, LAUNCHD_SOCKET

SOCKET_ENV = "SHARNESS_LAUNCHD_SOCKET"  # another daemon's socket (tests, a second instance); default LAUNCHD_SOCKET


class DaemonUnavailable(Exception):
    """No daemon answered at the socket."""


def socket_path() -> str:
    return os.environ.get(SOCKET_ENV) or LAUNCHD_SOCKET


def daemon_present() -> bool:
    """Whether a daemon's socket is there (whether it answers is found out by asking)."""
    with contextlib.suppress(OSError):
        import stat

        return stat.S_ISSOCK(os.stat(socket_path()).st_mode)
    return False


def connect() -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        conn.connect(socket_path())
    except OSError as exc:
        conn.close()
        raise DaemonUnavailable(f"sharness-launchd does not answer at {socket_path()}: {exc.strerror or exc}") from None
    return conn


def ask(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Send one query, return every frame of the answer (the daemon closes after it)."""
    conn = connect()
    try:
        send_frame(conn, message)
        reader, frames = FrameReader(), []
        while (frame := read_frame(conn, reader)) is not None:
            frames.append(frame)
        return frames
    finally:
        conn.close()


NO_ANSWER: dict[str, Any] = {"type": "refused", "reason": "the daemon gave no answer"}


def ask_or_say(message: dict[str, Any]) -> list[dict[str, Any]] | None:
    """`ask`, or None once it said on stderr why the daemon could not be asked (the caller exits EXIT_UNAVAILABLE)."""
    try:
        return ask(message)
    except DaemonUnavailable as exc:
        print(f"sharness-launch: {exc}", file=sys.stderr)
        return None


def say_refusal(frame: dict[str, Any]) -> int:
    print(f"sharness-launch: {frame.get('words') or frame.get('reason')}", file=sys.stderr)
    if frame.get("hint"):
        print(f"  hint: {frame['hint']}", file=sys.stderr)
    code = frame.get("exit_code")
    return code if isinstance(code, int) else EXIT_FAIL_CLOSED


class _Terminal:
    """The caller's terminal modes, put back however the session ends (the daemon may die mid-session)."""

    def __init__(self) -> None:
        self._saved: Any = None
        with contextlib.suppress(termios.error, OSError):
            if os.isatty(0):
                self._saved = termios.tcgetattr(0)

    def restore(self) -> None:
        if self._saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(0, termios.TCSADRAIN, self._saved)


def run_through_daemon(manifest: bytes, expect_hash: str, *, best_effort: bool, summary_json: bool) -> int:
    """Ask the daemon to run the manifest with this process's stdio; the session's exit code."""
    print(f"sharness-launch: asking sharness-launchd at {socket_path()} (the session runs as the daemon's)",
          file=sys.stderr)
    try:
        conn = connect()
    except DaemonUnavailable as exc:
        print(f"sharness-launch: {exc}; nothing was created", file=sys.stderr)
        return EXIT_UNAVAILABLE
    terminal = _Terminal()
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    old_wakeup = signal.set_wakeup_fd(wake_w)
    handled = (signal.SIGWINCH, signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {signum: signal.signal(signum, lambda *_: None) for signum in handled}
    try:
        send_frame(conn, run_message(manifest, expect_hash, best_effort=best_effort, summary_json=summary_json),
                   fds=(0, 1, 2))
        return _follow(conn, wake_r)
    except (OSError, ProtocolError) as exc:
        print(f"sharness-launch: the daemon's connection failed: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    finally:
        signal.set_wakeup_fd(old_wakeup)
        for signum, handler in old.items():
            signal.signal(signum, handler)
        os.close(wake_r)
        os.close(wake_w)
        conn.close()
        terminal.restore()


def _follow(conn: socket.socket, wake_r: int) -> int:
    """Frames until the exit; a window change is passed on, an interrupt half-closes (the session then ends in
    order, and its exit code still arrives)."""
    reader = FrameReader()
    while True:
        ready, _, _ = select.select([conn.fileno(), wake_r], [], [])
        if wake_r in ready:
            signals = os.read(wake_r, 64)
            if signal.SIGWINCH in signals:
                with contextlib.suppress(OSError):
                    conn.sendall(encode_frame({"op": "winch"}))
            if any(signum in signals for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_WR)
        if conn.fileno() not in ready:
            continue
        data = conn.recv(65536)
        if not data:
            print("sharness-launch: the daemon closed the connection before the session's end (see `sharness-launch "
                  "logs`)", file=sys.stderr)
            return EXIT_FAIL_CLOSED
        reader.feed(data)
        while (frame := reader.next_frame()) is not None:
            if frame.get("type") == "refused":
                return say_refusal(frame)
            if frame.get("type") == "exit":
                code = frame.get("code")
                return code if isinstance(code, int) else EXIT_FAIL_CLOSED
