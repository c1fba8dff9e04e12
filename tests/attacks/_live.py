"""A launcher run the test talks to while it runs: the app's JSON lines as they come, stdin to answer."""

from __future__ import annotations

import fcntl
import json
import os
import selectors
import signal
import subprocess
import termios
import time
from pathlib import Path
from typing import Any

from tests.integration._session import LAUNCHER, manifest_hash


def _controlling_terminal() -> None:
    """In the launcher's child before exec: the pty on fd 0 becomes its session's controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class LiveSession:
    """`sharness-launch run --json` in the background; its app speaks JSON lines on stdout, reads stdin.

    With `tty`, stdin is a pseudo-terminal that is the launcher's controlling terminal, as when a person
    runs it from a shell; the test types into its master side.
    """

    def __init__(self, manifest: Path, audit_root: Path, stderr_path: Path, tty: bool = False) -> None:
        command = [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                   str(audit_root), "--json"]
        self._stderr = stderr_path.open("wb")
        self._master: int | None = None
        stdin: int = subprocess.PIPE
        self.tty_name, self.tty_rdev, self.modes_before = "", 0, list[Any]()
        if tty:
            self._master, stdin = os.openpty()
            attrs = termios.tcgetattr(stdin)
            attrs[3] &= ~termios.ECHO  # what the test types is not echoed back into the terminal
            termios.tcsetattr(stdin, termios.TCSANOW, attrs)
            self.tty_name, self.tty_rdev = os.ttyname(stdin), os.fstat(stdin).st_rdev
            self.modes_before = termios.tcgetattr(stdin)
        self.proc = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=self._stderr,
                                     start_new_session=tty, preexec_fn=_controlling_terminal if tty else None)
        if tty:
            os.close(stdin)
        self.probes: dict[str, dict[str, Any]] = {}
        self.other_lines: list[str] = []
        self._buffer = b""
        self._stderr_path = stderr_path

    def _lines(self, timeout_s: float) -> list[str]:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout_s):
                return []
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            raise EOFError("the launcher closed its stdout")
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        return [line.decode() for line in lines]

    def _take(self, line: str) -> None:
        if line.startswith('{"probe"'):
            found = json.loads(line)
            self.probes[found["probe"]] = found
        else:
            self.other_lines.append(line)

    def wait_probe(self, probe: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """Read the app's lines until `probe` has been reported; its line."""
        deadline = time.monotonic() + timeout_s
        while probe not in self.probes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {probe!r} line in {timeout_s} s; stderr: {self.stderr()[-2000:]}")
            try:
                for line in self._lines(left):
                    self._take(line)
            except EOFError as exc:
                raise AssertionError(f"no {probe!r} line before the launcher ended; "
                                     f"stderr: {self.stderr()[-3000:]}") from exc
        return self.probes[probe]

    def send(self, text: str) -> None:
        if self._master is not None:
            os.write(self._master, text.encode() + b"\n")
            return
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def finish(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Wait for the launcher to end; its --json summary."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        deadline = time.monotonic() + timeout_s
        try:
            while (left := deadline - time.monotonic()) > 0:
                for line in self._lines(left):
                    self._take(line)
        except EOFError:
            pass
        self.proc.wait(timeout=max(deadline - time.monotonic(), 1))
        if self._buffer:
            self._take(self._buffer.decode())
            self._buffer = b""
        text = "\n".join(self.other_lines)
        return dict(json.loads(text[text.index("{"):]))

    def terminal_modes(self) -> list[Any]:
        """The person's terminal's modes now (tcgetattr on a pty's master gives its slave's)."""
        assert self._master is not None, "not started with tty=True"
        return termios.tcgetattr(self._master)

    def screen_until(self, end: bytes, timeout_s: float = 60.0) -> bytes:
        """What reached the person's terminal (its master side) up to and with `end`."""
        assert self._master is not None, "not started with tty=True"
        seen = b""
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self._master, selectors.EVENT_READ)
            while end not in seen:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"{end!r} never reached the terminal; it got {seen[-500:]!r}")
                seen += os.read(self._master, 65536)
        return seen

    def stderr(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        """End a launcher that is still running (a failed test): SIGTERM tears its session down."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        if self._master is not None:
            os.close(self._master)  # only now: closing the master hangs up the launcher's session
            self._master = None
