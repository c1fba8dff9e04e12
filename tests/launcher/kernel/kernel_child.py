"""Test helpers for the kernel primitives: run a probe in a real forked child and bring back its errno.

Not a test module: the `test_*` files import it. Every resource helper removes what it made in `finally`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from launcher.kernel import users
from launcher.kernel.confine import ConfinementError, ConfinementSpec, apply_confinement
from launcher.kernel.landlock import LandlockRules
from launcher.kernel.probe import landlock_abi
from tests.as_user import open_ancestors


@dataclass(frozen=True)
class ChildResult:
    """What a probe child reported (`errno`, `value`, `confine` step or `error`) and how it ended."""

    report: dict[str, Any]
    status: int

    @property
    def errno(self) -> int | None:
        return self.report.get("errno")

    @property
    def killed_by(self) -> int | None:
        return os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None


def _child_main(setup: Callable[[int], None], probe: Callable[[], object], wfd: int) -> None:
    report: dict[str, Any]
    try:
        setup(wfd)
        report = {"value": probe()}
    except ConfinementError as exc:
        report = {"confine": exc.step, "detail": exc.detail}
    except OSError as exc:
        report = {"errno": exc.errno, "detail": str(exc)}
    except BaseException as exc:
        report = {"error": repr(exc)}
    os.write(wfd, json.dumps(report, default=repr).encode())


def run_child(setup: Callable[[int], None], probe: Callable[[], object]) -> ChildResult:
    """Fork; in the child run setup(report_fd) then probe(); an OSError's errno comes back as `errno`."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(rfd)
            _child_main(setup, probe, wfd)
        finally:
            os._exit(0)
    os.close(wfd)
    chunks = []
    while chunk := os.read(rfd, 65536):
        chunks.append(chunk)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    report = json.loads(b"".join(chunks)) if chunks else {}
    return ChildResult(report, status)


def confined_raw(spec: ConfinementSpec, probe: Callable[[], object]) -> ChildResult:
    """Run probe in a child after apply_confinement(spec) (the report pipe is kept open)."""
    parent = os.getpid()

    def setup(wfd: int) -> None:
        open_ancestors()  # the child goes on running this Python from the tree as spec.uid
        apply_confinement(replace(spec, keep_fds=(*spec.keep_fds, wfd), parent_pid=parent))

    return run_child(setup, probe)


def confined(spec: ConfinementSpec, probe: Callable[[], object]) -> ChildResult:
    """confined_raw, asserting that confinement itself worked and the probe did not crash."""
    result = confined_raw(spec, probe)
    assert "confine" not in result.report, f"confinement itself failed: {result.report}"
    assert "error" not in result.report, f"probe crashed: {result.report}"
    return result


def as_user(uid: int, gid: int) -> Callable[[int], None]:
    """A setup that only drops to uid/gid (no Landlock, no seccomp): the control run."""

    def setup(_wfd: int) -> None:
        open_ancestors()
        os.setgroups([gid])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)

    return setup


@dataclass(frozen=True)
class ScratchUser:
    name: str
    uid: int
    gid: int


@contextlib.contextmanager
def scratch_user() -> Iterator[ScratchUser]:
    """A real `sh-test-…` system user, removed afterwards even on failure."""
    name = f"sh-test-{secrets.token_hex(3)}"
    try:
        uid = users.create_user(name)
        yield ScratchUser(name, uid, users.gid_of(name))
    finally:
        users.delete_user(name)


def make_spec(user: ScratchUser, **overrides: Any) -> ConfinementSpec:
    """A spec with everything off but the ids and seccomp (which always applies), overridable."""
    fields: dict[str, Any] = {
        "uid": user.uid, "gid": user.gid, "groups": (user.gid,), "netns_fd": None, "cgroup": None,
        "rlimits": {}, "landlock": None, "landlock_abi": landlock_abi(), "seccomp_deny_inet": False,
        "keep_fds": (), "env": {"PATH": "/usr/bin:/bin"}, "cwd": "/",
    }
    fields.update(overrides)
    return ConfinementSpec(**fields)


@contextlib.contextmanager
def scratch_dir() -> Iterator[str]:
    """A `/tmp/sharness-test-…` directory, removed afterwards."""
    path = tempfile.mkdtemp(prefix="sharness-test-")
    try:
        os.chmod(path, 0o755)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def process_as(uid: int, gid: int) -> Iterator[int]:
    """A sleeping process running as uid/gid outside any Landlock domain; killed and reaped afterwards."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.setgroups([gid])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.write(wfd, b"1")
            signal.pause()
        finally:
            os._exit(0)
    os.close(wfd)
    try:
        os.read(rfd, 1)
        yield pid
    finally:
        os.close(rfd)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def rules(**kw: Any) -> LandlockRules:
    """LandlockRules with no IPC scoping unless asked (tests turn on one thing at a time)."""
    kw.setdefault("scope_signals", False)
    kw.setdefault("scope_abstract_unix", False)
    return LandlockRules(**kw)
