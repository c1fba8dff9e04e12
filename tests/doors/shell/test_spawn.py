"""A zygote is confined before it is sent anything, runs what it is sent, says which step refused, and an unused
one leaves nothing. As root on the real kernel: its cgroup, fds and Landlock layer are the kernel's."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import shutil
import signal
import socket
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from doors.shell._cgroup import CommandCgroup
from doors.shell._landlock import command_ruleset
from doors.shell._spare import Spares
from doors.shell._spawn import Launch, Zygote, fork_zygote, read_report, send_launch, spawn_zygote
from doors.shell._zygote import ZYGOTE_READY

pytestmark = pytest.mark.root

RECVMSG = {"x86_64": 47, "aarch64": 212}[platform.machine()]
NOBODY = 65534
PR_SET_NO_NEW_PRIVS = 38
HIERARCHIES = ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids")
MAKERS = pytest.mark.parametrize("make", [fork_zygote, spawn_zygote], ids=["forked", "spawned"])


@pytest.fixture
def parents() -> Iterator[tuple[str, ...]]:
    name = f"sharness-test-{uuid.uuid4().hex[:8]}"
    made = tuple(os.path.join(root, name) for root in HIERARCHIES)
    for path in made:
        os.mkdir(path)
    try:
        yield made
    finally:  # also after a failed test: a zygote it left waiting is killed, then its cgroup can go
        for path in made:
            for child in [name for name in os.listdir(path) if name.startswith("cmd-")]:
                _empty(os.path.join(path, child))
                _rmdir(os.path.join(path, child))
            _rmdir(path)


def _empty(cgroup: str) -> None:
    with open(os.path.join(cgroup, "cgroup.procs")) as procs:
        for pid in [int(line) for line in procs if line.strip()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _rmdir(path: str) -> None:
    """Remove a command's cgroup: a reaped process leaves it a moment later (EBUSY until then, as CommandCgroup's
    callers retry)."""
    for _ in range(500):
        try:
            os.rmdir(path)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            time.sleep(0.01)
    os.rmdir(path)


def _waiting(pid: int) -> None:
    """Until the zygote blocks in recvmsg: every step before it has been taken (bounded by pytest's run, not a
    threshold: the zygote either gets there or has exited)."""
    while True:
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
        if syscall and syscall[0] == str(RECVMSG):
            return
        assert Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z", "the zygote exited before it waited"
        os.sched_yield()


def _run(zygote: Zygote, argv: list[str], cwd: str) -> tuple[bytes, bytes, int]:
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    cwd_fd = os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    send_launch(zygote, Launch(tuple(argv), {"PATH": "/usr/bin:/bin", "X": "x-value"}, cwd_fd, (null, out_w, err_w)))
    for fd in (out_w, err_w, null, cwd_fd):
        os.close(fd)
    with os.fdopen(zygote.report, "rb") as report:
        assert read_report(report.read()) is None
    with os.fdopen(out_r, "rb") as out, os.fdopen(err_r, "rb") as err:
        stdout, stderr = out.read(), err.read()
    _, status = os.waitpid(zygote.pid, 0)
    return stdout, stderr, os.waitstatus_to_exitcode(status)


@MAKERS
def test_a_zygote_waits_in_its_cgroup_holding_no_fd_of_the_door_then_runs_its_command_in_its_layer(
        parents: tuple[str, ...], tmp_path: Path, make: Callable[[tuple[str, ...], int], Zygote]) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    cgroup = CommandCgroup.create(parents, "cmd-c1")
    ruleset = command_ruleset((str(home),))
    door_secret = os.open(os.devnull, os.O_RDONLY)  # inheritable, as a careless fd of the door's would be
    os.set_inheritable(door_secret, True)
    try:
        zygote = make(cgroup.procs_files, ruleset)
        _waiting(zygote.pid)
        held = {int(fd) for fd in os.listdir(f"/proc/{zygote.pid}/fd")}
        cgroups = Path(f"/proc/{zygote.pid}/cgroup").read_text()
        script = f"echo $X; pwd; echo in > {home}/ok; echo out > {elsewhere}/no"
        stdout, stderr, code = _run(zygote, ["sh", "-c", script], str(home))
    finally:
        os.close(door_secret)
        os.close(ruleset)
    assert door_secret not in held and len(held - {0, 1, 2}) == 2, held  # its control socket and report pipe
    assert {line.rpartition(":")[2] for line in cgroups.splitlines() if line.split(":")[1] in ("memory", "pids")} == {
        f"/{os.path.basename(parents[0])}/cmd-c1"}, cgroups
    assert stdout == f"x-value\n{home}\n".encode()
    assert (home / "ok").read_text() == "in\n" and not (elsewhere / "no").exists()
    assert b"Permission denied" in stderr and code != 0  # the command's Landlock layer held outside HOME
    cgroup.remove()


@MAKERS
def test_a_zygote_that_cannot_join_its_cgroup_says_so_and_runs_nothing(
        tmp_path: Path, make: Callable[[tuple[str, ...], int], Zygote]) -> None:
    ruleset = command_ruleset((str(tmp_path),))
    try:
        zygote = make((str(tmp_path / "no-such-cgroup" / "cgroup.procs"),), ruleset)
    finally:
        os.close(ruleset)
    marker = tmp_path / "ran"
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    cwd_fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    send_launch(zygote, Launch(("touch", str(marker)), {"PATH": "/usr/bin:/bin"}, cwd_fd, (null, null, null)))
    os.close(null)
    os.close(cwd_fd)
    with os.fdopen(zygote.report, "rb") as report:
        failure = read_report(report.read())
    os.waitpid(zygote.pid, 0)
    assert failure is not None and (failure.step, failure.errno) == ("cgroup", 2) and not marker.exists()


def _single_threaded(check: Callable[[], None]) -> None:
    """Run `check` in a forked child, whose only thread is the forking one: the door refuses to fork a zygote
    with a second thread alive, and earlier tests may leave one in this process (trio's idle workers)."""
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(result_r)
            check()
            os.write(result_w, b"ok")
        except BaseException:
            os.write(result_w, traceback.format_exc().encode())
        finally:
            os._exit(0)
    os.close(result_w)
    with os.fdopen(result_r, "rb") as result:
        seen = result.read().decode()
    os.waitpid(pid, 0)
    assert seen == "ok", seen


def test_an_unused_zygote_is_killed_and_its_cgroup_and_tmpdir_removed(parents: tuple[str, ...],
                                                                      tmp_path: Path) -> None:
    _single_threaded(lambda: _unused_zygotes_go(parents, tmp_path))


def _unused_zygotes_go(parents: tuple[str, ...], tmp_path: Path) -> None:
    ruleset = command_ruleset((str(tmp_path),))
    spares = Spares(str(tmp_path), parents, ruleset)
    try:
        spares.refill()
        oldest, newest = spares._waiting  # the pool: two wait
        for made in (oldest, newest):
            _waiting(made.zygote.pid)
        spare = spares.take()  # the oldest ready one
        assert spare.zygote is oldest.zygote and spares._waiting == [newest]
        spares.refill()
        assert len(spares._waiting) == 2 and spares._waiting[0] is newest
        _waiting(spares._waiting[-1].zygote.pid)
        waiting = spares.take()
        assert waiting.zygote is newest.zygote
        assert (spare.command_id, waiting.command_id) == ("c1", "c2")
        assert os.path.isdir(spare.tmpdir) and os.path.basename(spare.tmpdir) == "c1"
        spares.discard(spare)
        third = spares._waiting[-1]
        spares.close()
        spares.discard(waiting)
    finally:
        os.close(ruleset)
    assert spares._waiting == []
    for gone in (spare, waiting, third):
        assert not Path(f"/proc/{gone.zygote.pid}").exists()  # killed and reaped
        assert not any(os.path.exists(path) for path in gone.cgroup.dirs)
    assert not os.path.exists(spare.tmpdir) and not os.path.exists(waiting.tmpdir)
    assert os.listdir(tmp_path) == []


def test_a_command_that_comes_while_the_zygote_made_ahead_still_starts_gets_a_fork_and_it_waits_for_the_next(
        parents: tuple[str, ...], tmp_path: Path) -> None:
    """The spawned zygote's interpreter start (15-25 ms) is not the next command's wait: a take before its READY
    forks one there and then, and the starting one is the next command's. Ids stay in the order of the takes.
    (Without the READY check the first take returns the starting zygote, the second forks: the ids' zygotes swap.)"""
    _single_threaded(lambda: _a_starting_zygote_is_not_waited_for(parents, tmp_path))


def _a_starting_zygote_is_not_waited_for(parents: tuple[str, ...], tmp_path: Path) -> None:
    ruleset = command_ruleset((str(tmp_path),))
    spares = Spares(str(tmp_path), parents, ruleset)
    try:
        spares.refill(up_to=1)
        (starting,) = spares._waiting  # one starting, none ready
        os.kill(starting.zygote.pid, signal.SIGSTOP)  # held before its READY, however slow this test runs
        with contextlib.suppress(BlockingIOError):
            assert starting.zygote.control.recv(1, socket.MSG_PEEK) == b"", "it said READY before it was stopped"
        first = spares.take()
        assert spares._waiting == [starting] and first.zygote.pid != starting.zygote.pid
        os.kill(starting.zygote.pid, signal.SIGCONT)
        _waiting(starting.zygote.pid)
        second = spares.take()
        assert second.zygote.pid == starting.zygote.pid and spares._waiting == []
        assert (first.command_id, second.command_id) == ("c1", "c2")
        assert [os.path.basename(first.tmpdir), os.path.basename(second.tmpdir)] == ["c1", "c2"]
        spares.discard(first)
        spares.discard(second)
    finally:
        os.close(ruleset)
    assert not any(os.path.exists(path) for path in first.cgroup.dirs + second.cgroup.dirs)
    assert os.listdir(tmp_path) == []


def test_a_spawned_zygote_says_ready_once_confined_and_a_forked_one_says_nothing(parents: tuple[str, ...],
                                                                                  tmp_path: Path) -> None:
    ruleset = command_ruleset((str(tmp_path),))
    said = {}
    try:
        for make in (spawn_zygote, fork_zygote):
            cgroup = CommandCgroup.create(parents, f"cmd-{make.__name__}")
            zygote = make(cgroup.procs_files, ruleset)
            _waiting(zygote.pid)
            try:
                said[make.__name__] = zygote.control.recv(8)
            except BlockingIOError:
                said[make.__name__] = None
            os.kill(zygote.pid, signal.SIGKILL)
            os.waitpid(zygote.pid, 0)
            zygote.control.close()
            os.close(zygote.report)
            _rmdir_all(cgroup.dirs)
    finally:
        os.close(ruleset)
    assert said == {"spawn_zygote": ZYGOTE_READY, "fork_zygote": None}


def _rmdir_all(dirs: tuple[str, ...]) -> None:
    for path in dirs:
        _rmdir(path)


def _beside(parents: tuple[str, ...], workdir: str, tell: int, go: int) -> bytes:
    """As the shell's kind of user (not root: root may read a sibling domain's /proc files): a zygote waits,
    another runs a command that tries to signal it and read its environ and maps."""
    ruleset = command_ruleset((workdir, "/dev/null"))
    waiting = fork_zygote(CommandCgroup((os.path.join(parents[0], "cmd-c2"),)).procs_files, ruleset)
    os.write(tell, str(waiting.pid).encode())
    os.read(go, 1)  # the test saw it wait (this process may not read its /proc: setuid made it undumpable)
    running = fork_zygote(CommandCgroup((os.path.join(parents[0], "cmd-c1"),)).procs_files, ruleset)
    script = (f"kill -0 {waiting.pid} 2>/dev/null; echo kill=$?; "
              f"cat /proc/{waiting.pid}/environ >/dev/null 2>&1; echo environ=$?; "
              f"cat /proc/{waiting.pid}/maps >/dev/null 2>&1; echo maps=$?")
    stdout, _, _ = _run(running, ["sh", "-c", script], workdir)
    os.kill(waiting.pid, 9)
    os.waitpid(waiting.pid, 0)
    return stdout


def test_a_command_can_neither_signal_nor_read_the_zygote_waiting_beside_it(parents: tuple[str, ...]) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="sharness-test-", dir="/tmp"))  # tmp_path's parents are root's 0700
    os.chown(workdir, NOBODY, NOBODY)
    for name in ("cmd-c1", "cmd-c2"):
        made = CommandCgroup.create(parents[:1], name)
        os.chown(made.procs_files[0], NOBODY, NOBODY)
    (result_r, result_w), (tell_r, tell_w), (go_r, go_w) = os.pipe(), os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:  # the shell door's shape: its own uid, no_new_privs (the launcher sets it for the door)
        try:
            for fd in (result_r, tell_r, go_w):
                os.close(fd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            ctypes.CDLL(None).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            os.write(result_w, _beside(parents, str(workdir), tell_w, go_r))
        except BaseException:
            os.write(result_w, traceback.format_exc().encode())
        finally:
            os._exit(0)
    for fd in (result_w, tell_w, go_r):
        os.close(fd)
    _waiting(int(os.read(tell_r, 32)))
    os.write(go_w, b"g")
    with os.fdopen(result_r, "rb") as result:
        seen = result.read()
    os.waitpid(pid, 0)
    for fd in (tell_r, go_w):
        os.close(fd)
    for name in ("cmd-c1", "cmd-c2"):
        _rmdir(os.path.join(parents[0], name))
    shutil.rmtree(workdir)
    # Without each zygote's own layer all three would be 0 (the same uid): Landlock scopes signals and refuses
    # ptrace-mode access across domains, so the waiting zygote's memory is not the next command's to read.
    assert seen == b"kill=1\nenviron=1\nmaps=1\n", seen


def test_a_zygote_that_died_while_it_waited_is_replaced_and_removed(parents: tuple[str, ...], tmp_path: Path) -> None:
    _single_threaded(lambda: _dead_zygote_replaced(parents, tmp_path))


def _dead_zygote_replaced(parents: tuple[str, ...], tmp_path: Path) -> None:
    ruleset = command_ruleset((str(tmp_path),))
    spares = Spares(str(tmp_path), parents, ruleset)
    try:
        spares.refill(up_to=1)
        (dead,) = spares._waiting
        os.kill(dead.zygote.pid, 9)  # the OOM killer, say: it is not reaped until the door looks
        os.waitid(os.P_PIDFD, dead.pidfd, os.WEXITED | os.WNOWAIT)
        taken = spares.take()
        spares.discard(taken)
    finally:
        os.close(ruleset)
    assert taken.command_id == "c1" and taken.zygote.pid != dead.zygote.pid
    assert not Path(f"/proc/{dead.zygote.pid}").exists()
    assert not any(os.path.exists(path) for path in dead.cgroup.dirs + taken.cgroup.dirs)


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether any readable mapping of `pid` holds `needle` (as root: /proc/<pid>/mem)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or line.rstrip().endswith("[vvar]") or "[vsyscall]" in line:
                continue
            start, end = (int(edge, 16) for edge in span.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except OSError:
                continue
    return False


def test_a_zygote_made_ahead_holds_none_of_the_doors_memory(parents: tuple[str, ...], tmp_path: Path) -> None:
    """A forked zygote holds a copy of the door's memory (its TLS key among it) until its command's execve, and the
    door copies each page it writes meanwhile; the spawned one made ahead holds none of it (without spawn_zygote in
    Spares.refill, the door's secret is found in it)."""
    _single_threaded(lambda: _made_ahead_holds_nothing(parents, tmp_path))


def _made_ahead_holds_nothing(parents: tuple[str, ...], tmp_path: Path) -> None:
    secret = b"door-secret-" + uuid.uuid4().hex.encode()  # made here: only this process's memory holds it
    ruleset = command_ruleset((str(tmp_path),))
    spares = Spares(str(tmp_path), parents, ruleset)
    try:
        spares.refill(up_to=1)
        (ahead,) = spares._waiting
        _waiting(ahead.zygote.pid)
        in_ahead = _memory_holds(ahead.zygote.pid, secret)
        on_demand = spares.take()  # takes the one made ahead: the next take finds none and forks
        assert on_demand.zygote is ahead.zygote
        forked = spares.take()
        _waiting(forked.zygote.pid)
        in_forked = _memory_holds(forked.zygote.pid, secret)
        spares.discard(on_demand)
        spares.discard(forked)
    finally:
        os.close(ruleset)
    assert (in_ahead, in_forked) == (False, True)
