"""Landlock: the pure rules record and plan, then real confined children refused by the kernel."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import sysconfig
from collections.abc import Callable

import pytest
from kernel_child import confined, confined_raw, make_spec, process_as, rules, run_child, scratch_dir, scratch_user

from launcher.kernel import landlock
from launcher.kernel._sys import libc
from launcher.kernel.landlock import LandlockError, LandlockRules, plan_ruleset, unheld
from launcher.kernel.probe import landlock_abi

# --- pure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("write", "exe"),
    [("/srv/w", "/srv/w"), ("/srv/w/bin", "/srv/w"), ("/srv", "/srv/w/bin"), ("/srv/w/", "/srv/w/./")],
)
def test_a_writable_path_is_never_executable(write: str, exe: str) -> None:
    with pytest.raises(LandlockError, match="a writable path is never executable"):
        LandlockRules(write=(write,), exec=(exe,))


def test_siblings_with_a_common_prefix_do_not_overlap() -> None:
    r = LandlockRules(write=("/srv/work",), exec=("/srv/workbin",))
    assert r.write == ("/srv/work",) and r.exec == ("/srv/workbin",)


def test_relative_paths_and_bad_ports_are_refused() -> None:
    with pytest.raises(LandlockError, match="not absolute"):
        LandlockRules(read=("etc",))
    with pytest.raises(LandlockError, match="out of range"):
        LandlockRules(tcp_connect=(70000,))


def test_plan_handles_every_right_the_abi_knows() -> None:
    r = LandlockRules(read=("/a",), write=("/b",), exec=("/c",), tcp_bind=(1,), tcp_connect=(2,))
    full = plan_ruleset(r, 7)
    assert full.handled_fs == (1 << 16) - 1
    assert full.handled_net == landlock.NET_BIND_TCP | landlock.NET_CONNECT_TCP
    assert full.scoped == landlock.SCOPE_SIGNAL | landlock.SCOPE_ABSTRACT_UNIX_SOCKET
    grants = dict(full.paths)
    assert not grants["/b"] & landlock.FS_EXECUTE and grants["/c"] & landlock.FS_EXECUTE
    assert grants["/b"] & landlock.FS_TRUNCATE and not grants["/c"] & landlock.FS_WRITE_FILE
    assert full.ports == ((landlock.NET_BIND_TCP, 1), (landlock.NET_CONNECT_TCP, 2))
    old = plan_ruleset(r, 1)
    assert old.handled_fs == (1 << 13) - 1 and old.handled_net == 0 and old.scoped == 0 and old.ports == ()
    assert plan_ruleset(r, 99) == full


def test_unheld_names_what_an_older_abi_cannot_hold() -> None:
    r = LandlockRules(read=("/a",))
    assert unheld(r, 7) == ()
    assert unheld(r, 5) == ("ipc scoping",)
    assert unheld(r, 3) == ("tcp ports", "device ioctl", "ipc scoping")
    assert "filesystem" in unheld(r, 0)
    with pytest.raises(LandlockError, match="ABI 0"):
        plan_ruleset(r, 0)


# --- kernel -------------------------------------------------------------------------------------

ABI = landlock_abi()
needs_abi = pytest.mark.skipif(ABI < 6, reason=f"needs Landlock ABI >= 6, this kernel has {ABI}")
PYTHON_READ = tuple(
    sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], os.path.dirname(__file__)})
)


def _tree(root: str, uid: int, gid: int) -> dict[str, str]:
    """ro/ (readable), rw/ (the user's, with an executable copy of true), out/ (mode 0777, not granted)."""
    paths = {name: os.path.join(root, name) for name in ("ro", "rw", "out")}
    for path in paths.values():
        os.mkdir(path, 0o755)
    os.chmod(paths["out"], 0o777)
    os.chown(paths["rw"], uid, gid)
    for name in ("ro", "out"):
        with open(os.path.join(paths[name], "file.txt"), "w") as f:
            f.write("x")
    shutil.copy(shutil.which("true") or "/usr/bin/true", os.path.join(paths["rw"], "true"))
    os.chmod(os.path.join(paths["rw"], "true"), 0o755)
    os.chown(os.path.join(paths["rw"], "true"), uid, gid)
    return paths


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str) -> int:
    with open(path, "w") as f:
        return f.write("y")


def _exec_status(path: str) -> int:
    """Fork and execv path; the grandchild reports execv's errno as its exit code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - grandchild
        try:
            os.execv(path, [path])
        except OSError as exc:
            os._exit(100 + (exc.errno or 0))
        os._exit(99)
    _, status = os.waitpid(pid, 0)
    if os.WEXITSTATUS(status) >= 100:
        raise OSError(os.WEXITSTATUS(status) - 100, "execv")
    return os.WEXITSTATUS(status)


@pytest.mark.root
def test_fs_reads_writes_and_execs_outside_the_rules_get_eacces() -> None:
    with scratch_user() as user, scratch_dir() as root:
        t = _tree(root, user.uid, user.gid)
        spec = make_spec(user, landlock=rules(read=(t["ro"], *PYTHON_READ), write=(t["rw"],), exec=("/usr",)))
        true_in_rw = os.path.join(t["rw"], "true")
        # Controls, as the same uid without Landlock: DAC allows every one of these.
        control = run_child(lambda _fd: os.setresuid(user.uid, user.uid, user.uid), lambda: (
            _read(os.path.join(t["out"], "file.txt")), _write(os.path.join(t["out"], "new")),
            _exec_status(true_in_rw)))
        assert control.report == {"value": ["x", 1, 0]}
        os.unlink(os.path.join(t["out"], "new"))
        assert confined(spec, lambda: _read(os.path.join(t["ro"], "file.txt"))).report == {"value": "x"}
        assert confined(spec, lambda: _write(os.path.join(t["rw"], "new"))).report == {"value": 1}
        assert confined(spec, lambda: _exec_status("/usr/bin/true")).report == {"value": 0}
        assert confined(spec, lambda: _read(os.path.join(t["out"], "file.txt"))).errno == errno.EACCES
        assert confined(spec, lambda: _write(os.path.join(t["out"], "new"))).errno == errno.EACCES
        assert confined(spec, lambda: _write("/tmp/sharness-test-escape")).errno == errno.EACCES
        assert confined(spec, lambda: _exec_status(true_in_rw)).errno == errno.EACCES
        assert not os.path.exists(os.path.join(t["out"], "new"))


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock


def _connect(port: int) -> int:
    with socket.socket() as sock:
        sock.connect(("127.0.0.1", port))
    return 0


@pytest.mark.root
@pytest.mark.skipif(ABI < 4, reason=f"needs Landlock ABI >= 4 for TCP rules, this kernel has {ABI}")
def test_tcp_connect_to_a_port_not_granted_gets_eacces() -> None:
    with scratch_user() as user, _listener() as allowed, _listener() as other:
        allowed_port, other_port = allowed.getsockname()[1], other.getsockname()[1]
        spec = make_spec(user, landlock=rules(read=PYTHON_READ, tcp_connect=(allowed_port,)))
        assert confined(spec, lambda: _connect(allowed_port)).report == {"value": 0}
        assert confined(spec, lambda: _connect(other_port)).errno == errno.EACCES

        def bind_any() -> int:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
            return 0

        # Binding port 0 asks for an ephemeral port: Landlock checks the port given (0), not granted.
        assert confined(spec, bind_any).errno == errno.EACCES


@pytest.mark.root
@needs_abi
def test_signal_to_a_process_outside_the_domain_gets_eperm_when_scoped() -> None:
    with scratch_user() as user, process_as(user.uid, user.gid) as outsider:
        unscoped = make_spec(user, landlock=rules(read=PYTHON_READ))
        scoped = make_spec(user, landlock=rules(read=PYTHON_READ, scope_signals=True))
        assert confined(unscoped, lambda: os.kill(outsider, 0)).report == {"value": None}
        assert confined(scoped, lambda: os.kill(outsider, 0)).errno == errno.EPERM


@pytest.mark.root
@needs_abi
def test_abstract_unix_connect_outside_the_domain_gets_eperm_when_scoped() -> None:
    name = f"\0sharness-test-{os.getpid()}"
    with scratch_user() as user, socket.socket(socket.AF_UNIX) as server:
        server.bind(name)
        server.listen(8)

        def connect() -> int:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(name)
            return 0

        unscoped = make_spec(user, landlock=rules(read=PYTHON_READ))
        scoped = make_spec(user, landlock=rules(read=PYTHON_READ, scope_abstract_unix=True))
        assert confined(unscoped, connect).report == {"value": 0}
        assert confined(scoped, connect).errno == errno.EPERM


@pytest.mark.root
def test_a_missing_path_fails_confinement_at_the_landlock_step() -> None:
    with scratch_user() as user:
        spec = make_spec(user, landlock=rules(read=("/nonexistent/sharness-test",)))
        result = confined_raw(spec, lambda: 0)
        assert result.report["confine"] == "landlock" and "/nonexistent/sharness-test" in result.report["detail"]



@pytest.mark.root
def test_a_magic_link_is_never_granted() -> None:
    """/proc/self/root as an exec path would make the whole root executable, the writable TMPDIR with it:
    Landlock's own open refuses to pass a magic link, whatever the manifest check let through."""
    with scratch_user() as user:
        for path in ("/proc/self/root", "/proc/self/cwd", "/proc/thread-self/root/usr"):
            result = confined_raw(make_spec(user, landlock=rules(read=PYTHON_READ, exec=(path,))), lambda: 0)
            assert result.report["confine"] == "landlock" and "magic link" in result.report["detail"], path


@pytest.mark.root
def test_a_missing_path_listed_if_present_is_skipped_and_any_other_fails() -> None:
    """A system file this distribution lacks (/etc/gai.conf here and there) grants nothing and is no error;
    a missing path that is not listed so still fails at the landlock step."""
    with scratch_user() as user, scratch_dir() as root:
        absent = os.path.join(root, "absent")
        listed = make_spec(user, landlock=rules(read=(*PYTHON_READ, absent), if_present=(absent,)))
        assert confined(listed, lambda: 0).report == {"value": 0}
        unlisted = confined_raw(make_spec(user, landlock=rules(read=(*PYTHON_READ, absent))), lambda: 0)
        assert unlisted.report["confine"] == "landlock" and absent in unlisted.report["detail"]


@pytest.mark.root
def test_the_rule_is_on_the_fd_it_is_given_not_on_the_name() -> None:
    """apply_landlock with an opened fd (the private root's bind source) grants that file, not what the name
    leads to by the time the rules are made: a path swapped after it was resolved grants nothing new."""
    with scratch_user() as user, scratch_dir() as root:
        t = _tree(root, user.uid, user.gid)
        named = t["ro"]

        def setup(_wfd: int) -> None:
            fd = os.open(t["out"], os.O_PATH | os.O_CLOEXEC)  # what the launcher resolved: out/
            os.setgroups([user.gid])
            os.setresgid(user.gid, user.gid, user.gid)
            os.setresuid(user.uid, user.uid, user.uid)
            libc.prctl(libc.PR_SET_NO_NEW_PRIVS, 1)
            landlock.apply_landlock(rules(read=(*PYTHON_READ, named)), ABI, {named: fd})

        def probe() -> object:
            return {"out": _read(os.path.join(t["out"], "file.txt")),
                    "named": _errno_of(lambda: _read(os.path.join(named, "file.txt")))}

        assert run_child(setup, probe).report == {"value": {"out": "x", "named": "EACCES"}}


def _errno_of(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode[exc.errno or 0]
    return "ok"
