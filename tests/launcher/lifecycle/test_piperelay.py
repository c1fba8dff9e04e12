"""The app's pipe relay: real pipes and files stand for the launcher's stdio; the app is a real process.

Each test forks an app that gets the relay's pipe ends as its 0, 1 and 2 (as spawn_app does) and runs the
relay on its own poll until the app ends, then closes it as the session does after teardown.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from launcher.kernel.confine import place_fds
from launcher.lifecycle.piperelay import PipeRelay
from launcher.lifecycle.ptyrelay import BUFFER_LIMIT

WAIT_S = 60  # a guard against hanging, never a measure: every wait below ends on what it waits for


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A relay that blocked on a full sink would hang the test: turn that into a failure."""
    def hung(_signum: int, _frame: FrameType | None) -> None:
        raise AssertionError("the relay blocked")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(WAIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _fork_app(relay: PipeRelay, code: str) -> int:
    stdio = relay.app_stdio()
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            place_fds(stdio)
            os.execv(sys.executable, [sys.executable, "-c", code])
        finally:
            os._exit(127)
    relay.app_started()
    return pid


def _run_until_exit(relay: PipeRelay, pid: int, end_lines_on: frozenset[int] = frozenset({2})) -> int:
    deadline = time.monotonic() + WAIT_S
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0:
        assert time.monotonic() < deadline, "the app did not end"
        relay.run_once(0.05)
    relay.close(end_lines_on)
    return os.WEXITSTATUS(ended[1])


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            data += chunk
    return data


@pytest.fixture
def out_file() -> Iterator[Path]:
    fd, name = tempfile.mkstemp(prefix="sh-test-piperelay-")
    os.close(fd)
    try:
        yield Path(name)
    finally:
        os.unlink(name)


APP = r"""
import os, sys
line = sys.stdin.readline()
try:
    os.ftruncate(1, 0)
    truncated = "yes"
except OSError as exc:
    truncated = exc.strerror
sys.stdout.write(f"got {line.strip()}; truncate: {truncated}\n")
sys.stdout.flush()
sys.stderr.write("unfinished")
sys.exit(3 if sys.stdin.read() == "" else 4)
"""


def test_stdin_stdout_and_stderr_are_the_apps_own_pipes(out_file: Path, no_hang: None) -> None:
    """The person's stdin (a pipe) reaches the app and ends; its stdout lands in the launcher's file, which it
    cannot truncate (a pipe: EINVAL); its unfinished stderr line is ended before the launcher writes there."""
    stdin_r, stdin_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    out = os.open(out_file, os.O_WRONLY | os.O_TRUNC)
    os.write(out, b"the launcher's first line\n")
    os.write(stdin_w, b"hello\n")
    os.close(stdin_w)
    try:
        relay = PipeRelay.open((0, 1, 2), (stdin_r, out, stderr_w))
        code = _run_until_exit(relay, _fork_app(relay, APP))
        assert code == 3  # it read EOF after the line
        assert out_file.read_bytes() == b"the launcher's first line\ngot hello; truncate: Invalid argument\n"
        assert _read_all(stderr_r) == b"unfinished\n"
    finally:
        for fd in (stdin_r, stderr_r, stderr_w, out):
            os.close(fd)


def test_a_regular_file_as_stdin_is_copied_whole_and_ends(out_file: Path, no_hang: None) -> None:
    """A file cannot be polled (epoll refuses it): it is read as the app's pipe takes it, up to its end."""
    body = b"".join(b"%06d\n" % index for index in range(100_000))  # 700 kB, more than a pipe and a buffer hold
    out_file.write_bytes(body)
    source = os.open(out_file, os.O_RDONLY)
    count_r, count_w = os.pipe()
    try:
        relay = PipeRelay.open((0, 1), (source, count_w, 2))
        digest = hashlib.sha256(body).hexdigest()
        app = "import hashlib, sys; data = sys.stdin.buffer.read(); print(len(data), hashlib.sha256(data).hexdigest())"
        assert _run_until_exit(relay, _fork_app(relay, app)) == 0
        assert _read_all(count_r) == f"{len(body)} {digest}\n".encode()
    finally:
        for fd in (source, count_r, count_w):
            os.close(fd)


def test_a_full_sink_never_blocks_the_relay_and_bounds_what_it_buffers(no_hang: None) -> None:
    """The launcher's stdout is a pipe nobody reads: the relay keeps running (the alarm would fire), stops
    reading once BUFFER_LIMIT waits, so the app blocks on its own pipe; once the sink is read, all arrives."""
    sink_r, sink_w = os.pipe()
    total = 4 * BUFFER_LIMIT
    try:
        relay = PipeRelay.open((1,), (0, sink_w, 2))
        pid = _fork_app(relay, f"import os; os.write(1, b'x' * {total})")
        received = b""
        while len(received) < total:
            for _ in range(50):  # rounds with nobody reading: each returns
                relay.run_once(0)
            assert sum(len(copy.channel.pending) for copy in relay._copies) <= BUFFER_LIMIT
            received += _read_all(sink_r)
        assert received == b"x" * total
        assert _run_until_exit(relay, pid) == 0
    finally:
        os.close(sink_r)
        os.close(sink_w)


def test_a_sink_that_is_gone_does_not_stop_the_app(no_hang: None) -> None:
    """The reader of the launcher's stdout left (EPIPE): what the app writes is dropped, and it is not blocked."""
    sink_r, sink_w = os.pipe()
    os.close(sink_r)
    try:
        relay = PipeRelay.open((1,), (0, sink_w, 2))
        assert _run_until_exit(relay, _fork_app(relay, f"import os; os.write(1, b'y' * {4 * BUFFER_LIMIT})")) == 0
    finally:
        os.close(sink_w)


def test_a_line_is_ended_where_the_launcher_writes_next_and_only_there(out_file: Path, no_hang: None) -> None:
    """stdout and stderr one file (`2>&1`): the app's unfinished stdout line is ended before the launcher's
    stderr line. A stdout of its own is left byte for byte (it may be binary) unless the launcher prints there."""
    shared = os.open(out_file, os.O_WRONLY | os.O_TRUNC)
    alone_r, alone_w = os.pipe()
    app = "import sys; sys.stdout.write('partial'); sys.stdout.flush()"
    try:
        relay = PipeRelay.open((1, 2), (0, shared, shared))
        _run_until_exit(relay, _fork_app(relay, app))
        assert out_file.read_bytes() == b"partial\n"
        relay = PipeRelay.open((1, 2), (0, alone_w, shared))
        _run_until_exit(relay, _fork_app(relay, app))
        assert _read_all(alone_r) == b"partial"
        relay = PipeRelay.open((1, 2), (0, alone_w, shared))
        _run_until_exit(relay, _fork_app(relay, app), frozenset({1, 2}))  # run --json prints on stdout next
        assert _read_all(alone_r) == b"partial\n"
    finally:
        for fd in (shared, alone_r, alone_w):
            os.close(fd)


def test_a_relay_closed_before_the_app_started_closes_everything() -> None:
    before = set(os.listdir("/proc/self/fd"))
    relay = PipeRelay.open((0, 1, 2))
    assert set(relay.app_stdio()) == {0, 1, 2}
    relay.close()
    relay.close()
    assert set(os.listdir("/proc/self/fd")) == before
