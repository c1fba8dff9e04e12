"""The app's pid namespace init, through the real spawn_app and Supervisor (root, a scratch user, /bin/sh).

Its exit status comes back exactly as the app's, the launcher's SIGTERM reaches the app, the app's orphans
die with it, and the app cannot end its init even where Landlock would not stop it from trying: each both with
the compiled init (launcher/kernel/_init, what `make` builds) and with the Python loop it falls back to.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from launcher.kernel.init_binary import INIT_BINARY, usable_init_binary
from launcher.lifecycle import app_init, spawn
from launcher.lifecycle.spawn import describe_exit, spawn_app
from launcher.lifecycle.supervise import Supervisor
from tests.integration._session import in_pid_namespace, until_init_waits
from tests.launcher.kernel.kernel_child import ScratchUser, make_spec, scratch_user

pytestmark = pytest.mark.root
DEADLINE_S = 120  # only so that a hung init fails the test rather than the suite


@pytest.fixture(autouse=True, params=["compiled", "python"])
def init_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which wait loop pid 1 runs after it has forked the app and confined itself."""
    if request.param == "compiled" and usable_init_binary() is None:
        pytest.skip(f"{INIT_BINARY} is not built (no C compiler when `make` ran): the Python loop is used")
    if request.param == "python":
        monkeypatch.setattr(spawn, "usable_init_binary", lambda: None)
    return str(request.param)


@dataclass
class App:
    """A running app: the supervisor watching its init, its stdin and stdout, its user."""

    supervisor: Supervisor
    user: ScratchUser
    stdin: int
    stdout: int

    def line(self) -> str:
        """One line the app wrote (the tests' scripts write short lines)."""
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(self.stdout, 1)
            assert chunk, f"the app closed its stdout after {data!r}"
            data += chunk
        return data.decode().strip()


@contextmanager
def running(script: str) -> Iterator[App]:
    """`/bin/sh -c script` as spawn_app runs the app (no Landlock, host mounts: only what the init adds)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    with scratch_user() as user:
        supervisor = Supervisor(lambda event, fields: None)
        try:
            spec = make_spec(user, rlimits={}, env={"PATH": "/usr/bin:/bin"})
            spawned = spawn_app(("/bin/sh", "-c", script), spec, {0: in_r, 1: out_w, 2: 2})
            os.close(in_r)
            os.close(out_w)
            supervisor.watch(spawned)
            yield App(supervisor, user, in_w, out_r)
        finally:
            for fd in (in_w, out_r):
                os.close(fd)
            supervisor.stop("app", 10)
            supervisor.close()


@pytest.mark.parametrize(("script", "expected"), [
    ("exit 7", "app exited with code 7"),
    ("kill -USR1 $$", f"app was killed by signal {signal.SIGUSR1}"),
    ("exec /nonexistent/sharness-test", "app exited with code 127 (its command could not be executed)"),
])
def test_the_apps_wait_status_comes_back_exactly(script: str, expected: str) -> None:
    """The init itself cannot die by the app's signal (an init ignores what it has no handler for): it
    exits 128 + signal and reports the app's own wait status on its pipe, which the supervisor returns."""
    with running(script) as app:
        ending = app.supervisor.run_until_end("app", time.monotonic() + DEADLINE_S)
        assert ending.reason == expected
        assert describe_exit("app", app.supervisor.reap("app")) == expected


def test_a_status_the_init_did_not_report_is_its_own() -> None:
    read_end, write_end = os.pipe()
    os.close(write_end)
    assert app_init.reported_status(read_end, 9) == 9  # SIGKILLed before the app ended: nothing reported
    read_end, write_end = os.pipe()
    os.write(write_end, (7 << 8).to_bytes(4, "little"))
    os.close(write_end)
    assert app_init.reported_status(read_end, 135 << 8) == 7 << 8


def test_the_launchers_sigterm_reaches_the_app() -> None:
    """stop() signals the init's pidfd; the init passes SIGTERM on: the app ends by SIGTERM, not by the
    SIGKILL that would follow the grace period."""
    with running("echo started; exec sleep 1000") as app:
        assert app.line() == "started"
        status = app.supervisor.stop("app", 60)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_the_app_is_pid_2_and_what_it_left_dies_with_it() -> None:
    """The app leaves a sleeper in a session of its own and exits; once the init is reaped, no process of
    the app's uid is left (the kernel killed the namespace before the init's exit completed)."""
    script = "echo $$ $PPID; setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo started; read line; exit 5"
    with running(script) as app:
        assert app.line() == "2 1"
        assert app.line() == "started"
        namespace = os.readlink(f"/proc/{app.supervisor.pid_of('app')}/ns/pid")
        assert len(in_pid_namespace(namespace)) == 3  # the init, the app, its sleeper
        os.write(app.stdin, b"go\n")
        ending = app.supervisor.run_until_end("app", time.monotonic() + DEADLINE_S)
        assert ending.reason == "app exited with code 5"
        assert in_pid_namespace(namespace) == []


def test_the_app_cannot_end_its_init_even_unlandlocked() -> None:
    """Without Landlock's scoping (this spec has none) the app may signal its init once the init has its
    uid: SIGKILL and SIGSTOP from inside are ignored by the kernel (an init), SIGTERM, SIGINT and SIGHUP by
    the init (not from outside). Once the init is back waiting with nothing pending, the app still answers."""
    script = "echo ready; read a; for sig in KILL STOP TERM INT HUP; do kill -$sig 1 || exit 9; done; echo sent; " \
             "read b; exit 3"
    with running(script) as app:
        assert app.line() == "ready"
        until_init_waits(app.supervisor.pid_of("app"))  # confined by now: before, it is root and kill() says EPERM
        os.write(app.stdin, b"go\n")
        assert app.line() == "sent"
        until_init_waits(app.supervisor.pid_of("app"))
        os.write(app.stdin, b"go\n")
        ending = app.supervisor.run_until_end("app", time.monotonic() + DEADLINE_S)
        assert ending.reason == "app exited with code 3"


def test_pid_1_runs_the_compiled_init_once_it_waits(init_kind: str) -> None:
    """The init's image after its exec: the static program (a few hundred KiB), not the launcher's copy."""
    with running("echo ready; read line") as app:
        assert app.line() == "ready"
        init = app.supervisor.pid_of("app")
        until_init_waits(init)
        exe = os.readlink(f"/proc/{init}/exe")
        assert (exe == INIT_BINARY) is (init_kind == "compiled"), exe
        os.write(app.stdin, b"go\n")
        assert app.supervisor.run_until_end("app", time.monotonic() + DEADLINE_S).reason == "app exited with code 0"
