"""apply_confinement in real forked children: ids, privileges, fds, environment, netns; and place_fds."""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import secrets
import signal
import socket
import subprocess
import threading
import time
from dataclasses import replace

import pytest
from kernel_child import confined, confined_raw, make_spec, rules, run_child, scratch_dir, scratch_user

from launcher.kernel import landlock, netns
from launcher.kernel._sys import libc
from launcher.kernel.confine import (
    STEPS,
    ConfinementError,
    ConfinementSpec,
    apply_confinement,
    arm_parent_death_signal,
    place_fds,
    step_of_exit_code,
)
from launcher.kernel.probe import landlock_abi
from pki.vocabulary import EXIT_STEP_BASE

PR_GET_DUMPABLE, PR_GET_NO_NEW_PRIVS = 3, 39

# --- pure ---------------------------------------------------------------------------------------


def test_every_step_has_an_exit_code_the_parent_can_name() -> None:
    for step in STEPS:
        assert step_of_exit_code(ConfinementError(step, "x").exit_code) == step
    assert step_of_exit_code(0) is None and step_of_exit_code(EXIT_STEP_BASE + len(STEPS)) is None


def test_a_spec_with_root_ids_is_refused() -> None:
    with pytest.raises(ConfinementError, match="uid, gid or a group 0"):
        ConfinementSpec(uid=0, gid=5, groups=(), netns_fd=None, cgroup=None, rlimits={}, landlock=None,
                        landlock_abi=0, seccomp_deny_inet=True, keep_fds=(), env={}, cwd="/")


def test_place_fds_swaps_without_clobbering_and_clears_cloexec() -> None:
    pipes = [os.pipe() for _ in range(3)]
    a, b, c = (r for r, _ in pipes)
    hi = 200
    for offset, fd in enumerate((a, b, c), start=1):
        os.dup2(fd, hi + offset)
    try:
        # hi+1 goes to hi+2 while hi+2 goes to hi+1 (a swap), and hi+3 stays where it is.
        place_fds({hi + 2: hi + 1, hi + 1: hi + 2, hi + 3: hi + 3})
        assert os.fstat(hi + 2).st_ino == os.fstat(a).st_ino
        assert os.fstat(hi + 1).st_ino == os.fstat(b).st_ino
        assert os.fstat(hi + 3).st_ino == os.fstat(c).st_ino
        for fd in (hi + 1, hi + 2, hi + 3):
            assert not fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        for fd in (hi + 1, hi + 2, hi + 3):
            os.close(fd)
        for r, w in pipes:
            os.close(r)
            os.close(w)


# --- kernel -------------------------------------------------------------------------------------


@pytest.mark.root
def test_ids_take_and_root_cannot_be_regained() -> None:
    with scratch_user() as user:
        spec = make_spec(user)
        result = confined(spec, lambda: [os.getresuid(), os.getresgid(), os.getgroups()])
        assert result.report == {"value": [[user.uid] * 3, [user.gid] * 3, [user.gid]]}
        assert confined(spec, lambda: os.setuid(0)).errno == errno.EPERM
        assert confined(spec, lambda: os.setgroups([0])).errno == errno.EPERM


@pytest.mark.root
def test_privileges_rlimits_session_fds_environment_and_cwd() -> None:
    with scratch_user() as user, scratch_dir() as cwd:
        keep_r, keep_w = os.pipe()
        stray = os.open("/dev/null", os.O_RDONLY)
        os.set_inheritable(stray, True)
        try:
            spec = make_spec(user, keep_fds=(keep_r,), env={"SHARNESS_X": "1"}, cwd=cwd,
                             rlimits={resource.RLIMIT_NOFILE: (64, 64)})

            def look() -> dict[str, object]:
                return {
                    "pdeathsig": libc.parent_death_signal(),
                    "nnp": libc.prctl(PR_GET_NO_NEW_PRIVS), "dumpable": libc.prctl(PR_GET_DUMPABLE),
                    "sid": os.getsid(0) == os.getpid(), "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
                    "env": dict(os.environ), "cwd": os.getcwd(),
                    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
                    "core": resource.getrlimit(resource.RLIMIT_CORE),
                }

            report = confined(spec, look).report["value"]
        finally:
            for fd in (keep_r, keep_w, stray):
                os.close(fd)
    assert report["pdeathsig"] == signal.SIGKILL  # still armed after setuid, which clears it
    assert report["nnp"] == 1 and report["dumpable"] == 0 and report["sid"] is True
    # 0-2, the kept fd, the report pipe, and the fd listdir opened for itself: nothing else.
    assert keep_r in report["fds"] and stray not in report["fds"] and len(report["fds"]) == 6
    assert report["env"] == {"SHARNESS_X": "1"} and report["cwd"] == cwd
    assert report["nofile"] == [64, 64] and report["core"] == [0, 0]


@pytest.mark.root
def test_a_child_whose_parent_is_gone_leaves_before_running_anything() -> None:
    with scratch_user() as user:
        spec = make_spec(user, parent_pid=1)  # not our parent: as if the launcher had died after fork
        result = run_child(lambda _fd: apply_confinement(spec), lambda: 0)
        assert os.WIFEXITED(result.status) and os.WEXITSTATUS(result.status) == 199 and result.report == {}


@pytest.mark.root
def test_a_failing_step_is_named() -> None:
    with scratch_user() as user:
        result = confined_raw(make_spec(user, cwd="/nonexistent/sharness-test"), lambda: 0)
        assert result.report["confine"] == "cwd"
        result = confined_raw(make_spec(user, netns_fd=9999), lambda: 0)
        assert result.report["confine"] == "netns" and "Bad file descriptor" in result.report["detail"]
        with open("/dev/null") as not_a_netns:
            result = confined_raw(make_spec(user, netns_fd=not_a_netns.fileno()), lambda: 0)
        assert result.report["confine"] == "netns" and "not a network namespace" in result.report["detail"]


def _connect(host: str, port: int) -> int:
    with socket.socket() as sock:
        sock.settimeout(5)
        sock.connect((host, port))
    return 0


@pytest.mark.root
def test_loopback_netns_has_no_route_out_and_its_own_loopback() -> None:
    name = f"sh-test-{secrets.token_hex(3)}"
    with scratch_user() as user:
        try:
            netns.create_netns(name, loopback_up=True)
            listener = netns.tcp_listener_in_netns(name, "127.0.0.1", 0)
            port = listener.getsockname()[1]
            fd = netns.netns_fd(name)
            try:
                spec = make_spec(user, netns_fd=fd)
                # TEST-NET-1: documentation space; with no route the kernel refuses before any packet.
                assert confined(spec, lambda: _connect("192.0.2.1", 80)).errno == errno.ENETUNREACH
                assert confined(spec, lambda: _connect("127.0.0.1", port)).report == {"value": 0}
                # The listener is not in the host's namespace.
                assert run_child(lambda _fd: None, lambda: _connect("127.0.0.1", port)).errno == errno.ECONNREFUSED
            finally:
                os.close(fd)
                listener.close()
        finally:
            netns.delete_netns(name)


@pytest.mark.root
def test_empty_netns_has_not_even_loopback() -> None:
    name = f"sh-test-{secrets.token_hex(3)}"
    with scratch_user() as user:
        try:
            netns.create_netns(name, loopback_up=False)
            fd = netns.netns_fd(name)
            try:
                spec = make_spec(user, netns_fd=fd)
                assert confined(spec, lambda: _connect("127.0.0.1", 9)).errno == errno.ENETUNREACH
            finally:
                os.close(fd)
        finally:
            netns.delete_netns(name)


@pytest.mark.root
def test_deny_inet_reaches_the_child_through_the_spec() -> None:
    def inet() -> int:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        return 0

    with scratch_user() as user:
        assert confined(make_spec(user, seccomp_deny_inet=False), inet).report == {"value": 0}
        assert confined(make_spec(user, seccomp_deny_inet=True), inet).errno == errno.EPERM


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.root
def test_a_confined_child_dies_with_its_parent() -> None:
    rfd, wfd = os.pipe()
    with scratch_user() as user:
        spec = make_spec(user, keep_fds=(wfd,))
        middle = os.fork()
        if middle == 0:  # pragma: no cover - the stand-in launcher
            parent = os.getpid()
            if os.fork() == 0:
                try:
                    apply_confinement(replace(spec, parent_pid=parent))
                    os.write(wfd, f"{os.getpid()}\n".encode())
                    signal.pause()
                finally:
                    os._exit(3)
            os.close(wfd)
            os.close(rfd)
            signal.pause()  # until the test kills it
            os._exit(0)
        os.close(wfd)
        child = int(os.read(rfd, 64).split()[0])
        os.close(rfd)
        assert not _dead(child)
        os.kill(middle, signal.SIGKILL)  # the launcher dies
        os.waitpid(middle, 0)
        for _ in range(500):
            if _dead(child):
                break
            time.sleep(0.01)
        else:
            os.kill(child, signal.SIGKILL)
            pytest.fail("the confined child outlived its parent: the parent-death signal was not armed")


@pytest.mark.root
def test_threads_and_subprocesses_still_start_under_the_filter() -> None:
    """clone3 gets ENOSYS: glibc must fall back to clone for pthread_create and posix_spawn."""

    def start_both() -> list[int]:
        seen: list[int] = []
        worker = threading.Thread(target=lambda: seen.append(threading.get_native_id()))
        worker.start()
        worker.join()
        return [len(seen), subprocess.run(["/usr/bin/true"], check=False).returncode]

    with scratch_user() as user:
        assert confined(make_spec(user, seccomp_deny_inet=True), start_both).report == {"value": [1, 0]}


def _listen(family: int) -> int:
    """listen() on an unbound socket: TCP binds an ephemeral port itself; an abstract Unix name for Unix."""
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if family == socket.AF_UNIX:
            sock.bind("\0sh-test-listen-" + secrets.token_hex(4))
        sock.listen(1)
    return 0


@pytest.mark.root
def test_listen_is_refused_where_tcp_may_be_made_but_no_port_bound() -> None:
    """Landlock alone (bind handled, no port granted) refuses bind(port 0) but lets listen() bind one itself:
    the ABI 7 gap. Confined with TCP allowed, seccomp refuses listen() (EPERM); without inet sockets, or
    with a bind row, listen() stays (a Unix server, a granted port)."""
    abi = landlock_abi()
    no_bind = rules(read=("/",), tcp_connect=(3128,))

    def landlock_only(_fd: int) -> None:
        libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1)
        landlock.apply_landlock(no_bind, abi)

    assert run_child(landlock_only, lambda: _listen(socket.AF_INET)).report == {"value": 0}
    with scratch_user() as user:
        tcp = make_spec(user, seccomp_deny_inet=False, landlock=no_bind)
        assert confined(tcp, lambda: _listen(socket.AF_INET)).errno == errno.EPERM
        assert confined(tcp, lambda: _listen(socket.AF_INET6)).errno == errno.EPERM
        assert confined(tcp, lambda: _listen(socket.AF_UNIX)).errno == errno.EPERM  # seccomp cannot tell them apart
        unix_only = make_spec(user, seccomp_deny_inet=True, landlock=no_bind)
        assert confined(unix_only, lambda: _listen(socket.AF_UNIX)).report == {"value": 0}
        bind_row = make_spec(user, seccomp_deny_inet=False, landlock=rules(read=("/",), tcp_bind=(8080,)))
        assert confined(bind_row, lambda: _listen(socket.AF_INET)).report == {"value": 0}


def _exited_pidfd() -> int:
    """A pidfd of a process that has exited (and been reaped): always readable."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os._exit(0)
    pidfd = os.pidfd_open(pid)
    os.waitpid(pid, 0)
    return pidfd


def test_in_a_pid_namespace_the_launchers_pidfd_says_it_is_gone() -> None:
    """A namespace's init has getppid() 0 whether the launcher lives or not: with parent_pidfd, a readable
    pidfd (the launcher exited) makes the child leave with 199; an open one lets it go on."""
    gone, alive = _exited_pidfd(), os.pidfd_open(os.getpid())
    try:
        orphan = run_child(lambda _fd: arm_parent_death_signal(None, gone), lambda: "went on")
        assert os.WIFEXITED(orphan.status) and os.WEXITSTATUS(orphan.status) == 199 and orphan.report == {}
        control = run_child(lambda _fd: arm_parent_death_signal(None, alive), lambda: "went on")
        assert control.report == {"value": "went on"}
    finally:
        os.close(gone)
        os.close(alive)
