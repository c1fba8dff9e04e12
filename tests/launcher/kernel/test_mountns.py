"""The private mount namespace: host runtime dirs hidden but the kept paths, other users' processes invisible;
each kept path one read-only mount without its submounts, opened once and pinned."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kernel_child import run_child

from launcher.kernel._sys import libc
from launcher.kernel.mountns import (
    MS_PRIVATE,
    MS_REC,
    Bind,
    ScratchMount,
    enter_private_root,
    own_mounts,
    planned,
    tmpfs_options,
)
from launcher.policy.confine_plan import door_allowance, python_paths
from launcher.policy.layout import SessionLayout

# --- pure ---------------------------------------------------------------------------------------


def test_planned_binds_each_path_once_parents_first_without_proc_and_the_root() -> None:
    binds = (Bind("/usr"), Bind("/run/sharness/ab/app/tmp", writable=True), Bind("/run/sharness/ab/app"),
             Bind("/tmp/ws/"), Bind("/dev/null"), Bind("/dev/null", writable=True), Bind("/proc"),
             Bind("/proc/self/root"), Bind("/"), Bind("/srv/x", pin=(1, 2)), Bind("/srv/x"))
    assert planned(binds) == (Bind("/dev/null", writable=True), Bind("/run/sharness/ab/app"),
                              Bind("/run/sharness/ab/app/tmp", writable=True), Bind("/srv/x", pin=(1, 2)),
                              Bind("/tmp/ws"), Bind("/usr"))
    assert planned(()) == ()


@pytest.mark.parametrize(("nested", "mount_id", "own"), [
    (Bind("/usr/bin"), 7, False),  # seen through /usr's bind: the same mount, read-only both
    (Bind("/usr/local"), 8, True),  # another mount: /usr's bind (no submounts) would show an empty directory
    (Bind("/usr/tmp", writable=True), 7, True),  # writable inside a read-only parent
    (Bind("/usr/share/doc", pin=(3, 4)), 7, True),  # a path the manifest names: bound from its pinned fd
])
def test_a_nested_path_gets_its_own_mount_only_when_its_parents_would_not_show_it(
        nested: Bind, mount_id: int, own: bool) -> None:
    binds = planned((Bind("/usr"), nested, Bind("/srv")))
    mounted = own_mounts(binds, {"/usr": 7, nested.path: mount_id, "/srv": 9})
    assert (Bind("/usr"), None) in mounted and (Bind("/srv"), None) in mounted
    assert ((nested, Bind("/usr")) in mounted) is own
    assert len(mounted) == 2 + own


def test_a_path_that_was_not_opened_is_not_mounted() -> None:
    assert own_mounts(planned((Bind("/usr"), Bind("/etc/gai.conf"))), {"/usr": 7}) == ((Bind("/usr"), None),)


# --- kernel -------------------------------------------------------------------------------------

@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="sh-test-mnt-", dir="/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _errno_of(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode[exc.errno or 0]
    return "ok"


def _entering(*binds: Bind) -> Callable[[int], None]:
    def setup(_wfd: int) -> None:
        enter_private_root(binds)

    return setup


def _own_namespace_with_a_submount(inner: Path) -> None:
    """In the child, before its private root: a namespace of its own in which `inner` is a tmpfs holding
    `seen-only-through-the-submount` (the host's mounts are untouched)."""
    libc.unshare(libc.CLONE_NEWNS)
    libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
    libc.mount("tmpfs", str(inner), "tmpfs", 0, "size=64k")
    (inner / "seen-only-through-the-submount").write_text("x")


def test_tmpfs_options_name_the_limits_and_the_owner() -> None:
    scratch = ScratchMount(("/r/app/home", "/r/app/tmp"), 8 * 1024 * 1024, 512, 1234, 5678)
    assert tmpfs_options(scratch) == "size=8388608,nr_inodes=512,mode=0700,uid=1234,gid=5678"


@pytest.mark.root
def test_scratch_dirs_share_one_limited_tmpfs_the_host_never_sees() -> None:
    """HOME and TMPDIR of the child are one tmpfs (its limits, its owner, nosuid/nodev/noexec, a bind of each
    subdirectory); the host's mount points stay empty, and its mounts never list that tmpfs."""
    base = Path(tempfile.mkdtemp(prefix="sh-test-mnt-", dir="/tmp"))
    try:
        private = base / "app"
        for path in (private, private / "home", private / "tmp"):
            path.mkdir()
        scratch = ScratchMount((str(private / "home"), str(private / "tmp")), 1024 * 1024, 64, 65533, 65533)

        def setup(_wfd: int) -> None:
            enter_private_root((Bind(str(private)),), scratch=scratch)
            os.setresgid(65533, 65533, 65533)
            os.setresuid(65533, 65533, 65533)

        def probe() -> object:
            (private / "tmp" / "note").write_text("in the tmpfs")
            lines = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()
                     if line.split()[4] in scratch.dirs]
            home, tmp = os.statvfs(private / "home"), os.statvfs(private / "tmp")
            return {"mounts": [(line[3], line[5], line[-1]) for line in lines],
                    "one_fs": os.stat(private / "home").st_dev == os.stat(private / "tmp").st_dev,
                    "limits": [(fs.f_blocks * fs.f_frsize, fs.f_files) for fs in (home, tmp)],
                    "owner": os.stat(private / "home").st_uid}

        confined = run_child(setup, probe).report["value"]
        assert confined["one_fs"] and confined["owner"] == 65533, confined
        assert confined["limits"] == [[1024 * 1024, 64]] * 2, confined
        assert [root for root, _, _ in confined["mounts"]] == ["/home", "/tmp"]  # each a subdirectory of the tmpfs
        assert all({"nosuid", "nodev", "noexec"} <= set(flags.split(",")) for _, flags, _ in confined["mounts"])
        assert all("size=1024k" in options and "nr_inodes=64" in options for *_, options in confined["mounts"])
        assert os.listdir(private / "tmp") == [] and os.listdir(private / "home") == []
        assert str(private / "tmp") not in Path("/proc/self/mountinfo").read_text()
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.root
def test_a_host_socket_is_hidden_but_a_kept_path_stays_and_other_uids_vanish_from_proc() -> None:
    with _scratch() as base:
        kept = base / "kept"
        kept.mkdir()
        (kept / "note").write_text("visible")
        host_socket = socket.socket(socket.AF_UNIX)
        host_socket.bind(str(base / "host.sock"))
        host_socket.listen(1)
        os.chmod(base / "host.sock", 0o666)
        victim = os.fork()
        if victim == 0:  # never returns into the test: a signal with a Python handler ends pause() too
            try:
                os.setresuid(65534, 65534, 65534)
                while True:
                    os.pause()
            finally:
                os._exit(0)

        def setup(_wfd: int) -> None:
            enter_private_root((Bind(str(kept)),))
            os.setresgid(65533, 65533, 65533)
            os.setresuid(65533, 65533, 65533)

        def probe() -> object:
            result = {"note": (kept / "note").read_text()}
            try:
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.connect(str(base / "host.sock"))
                result["socket"] = "connected"
            except OSError as exc:
                result["socket"] = errno.errorcode[exc.errno or 0]
            result["victim_visible"] = os.path.exists(f"/proc/{victim}")
            result["self_visible"] = os.path.exists("/proc/self/status")
            result["host_wide_files"] = [os.path.exists(f"/proc/{name}") for name in ("interrupts", "key-users")]
            return result

        try:
            control = run_child(lambda _wfd: None, probe)
            assert control.report["value"]["socket"] == "connected"
            assert control.report["value"]["victim_visible"] is True
            assert control.report["value"]["host_wide_files"] == [True, True]  # absent below: subset=pid
            confined = run_child(setup, probe)
            assert confined.report["value"] == {"note": "visible", "socket": "ENOENT", "victim_visible": False,
                                                "self_visible": True, "host_wide_files": [False, False]}
        finally:
            os.kill(victim, 9)
            os.waitpid(victim, 0)
            host_socket.close()
        assert os.path.exists(base / "host.sock")  # the host's view is untouched


@pytest.mark.root
def test_a_read_bind_is_a_read_only_mount_even_for_root_and_a_written_one_is_not() -> None:
    """Root passes DAC and has no Landlock here: EROFS is the mount's alone. The writable bind nested in the
    read-only one (the app's $TMPDIR inside its private directory) takes writes."""
    with _scratch() as base:
        (base / "read" / "tmp").mkdir(parents=True)

        def probe() -> object:
            return {"read": _errno_of(lambda: (base / "read" / "new").write_text("x")),
                    "tmp": _errno_of(lambda: (base / "read" / "tmp" / "new").write_text("x")),
                    "ro_flag": bool(os.statvfs(base / "read").f_flag & os.ST_RDONLY)}

        binds = (Bind(str(base / "read")), Bind(str(base / "read" / "tmp"), writable=True))
        result = run_child(_entering(*binds), probe)
        assert result.report["value"] == {"read": "EROFS", "tmp": "ok", "ro_flag": True}
        assert (base / "read" / "tmp" / "new").exists() and not (base / "read" / "new").exists()


@pytest.mark.root
def test_a_bind_never_carries_the_mounts_beneath_it_unless_they_are_kept_themselves() -> None:
    """A tmpfs mounted inside a kept directory: its file is not seen (one mount per path, no MS_REC), unless
    the submount is kept too, when it gets a mount of its own."""
    with _scratch() as base:
        inner = base / "kept" / "inner"
        inner.mkdir(parents=True)

        def listing() -> object:
            return sorted(os.listdir(inner))

        def only_parent(_wfd: int) -> None:
            _own_namespace_with_a_submount(inner)
            enter_private_root((Bind(str(base / "kept")),))

        def both(_wfd: int) -> None:
            _own_namespace_with_a_submount(inner)
            enter_private_root((Bind(str(base / "kept")), Bind(str(inner))))

        assert run_child(lambda _wfd: _own_namespace_with_a_submount(inner), listing).report["value"] == [
            "seen-only-through-the-submount"]  # the control: the submount is there before the private root
        assert run_child(only_parent, listing).report["value"] == []
        assert run_child(both, listing).report["value"] == ["seen-only-through-the-submount"]


@pytest.mark.root
def test_no_mount_point_is_ever_made_on_the_hosts_file_system() -> None:
    """A kept path lying in a submount of a writable kept directory: inside that directory's bind its mount
    point does not exist, and the child refuses rather than creating it in the person's directory."""
    with _scratch() as base:
        inner = base / "ws" / "inner"
        inner.mkdir(parents=True)

        def setup(_wfd: int) -> None:
            _own_namespace_with_a_submount(inner)
            (inner / "deeper").mkdir()
            enter_private_root((Bind(str(base / "ws"), writable=True), Bind(str(inner / "deeper"))))

        result = run_child(setup, lambda: "entered")
        assert "no mount point for" in result.report["error"] and "deeper" in result.report["error"]
        assert os.listdir(inner) == []  # the host's directory under the submount: nothing was made in it


@pytest.mark.root
@pytest.mark.parametrize("change", ["replaced", "symlink"])
def test_a_pinned_path_that_changed_since_the_launcher_checked_it_is_refused(change: str) -> None:
    """The pin is the preflight's (st_dev, st_ino): a directory swapped for another, or a symlink put in its
    place (followed for a launcher path, never for a pinned one), fails the mounts step."""
    with _scratch() as base:
        kept, other = base / "kept", base / "other"
        kept.mkdir()
        other.mkdir()
        pin = (os.stat(kept).st_dev, os.stat(kept).st_ino)
        kept.rmdir()
        if change == "replaced":
            other.rename(kept)
        else:
            kept.symlink_to(other)
        result = run_child(_entering(Bind(str(kept), pin=pin)), lambda: "entered")
        assert "error" in result.report, result.report
        words = "no longer the file" if change == "replaced" else "without a symlink"
        assert words in result.report["error"], result.report
        # the control: the same path unpinned (a launcher path) follows the symlink or takes the new directory
        assert run_child(_entering(Bind(str(kept))), lambda: "entered").report == {"value": "entered"}


@pytest.mark.root
@pytest.mark.parametrize("pinned", [False, True])
def test_a_file_renamed_over_while_the_root_is_made_is_opened_again_unless_pinned(pinned: bool) -> None:
    """/etc/passwd is renamed over each time an account is made (launcher/kernel/users.py): a bind of the old
    file fails (ENOENT from move_mount). A launcher path is opened again and the new file bound; a pinned
    path has changed since the launcher checked it: refused."""
    from launcher.kernel import mountns

    with tempfile.TemporaryDirectory(prefix="sh-test-mnt-", dir="/var/lib") as base:
        passwd = Path(base) / "passwd"
        passwd.write_text("old\n")
        pin = (os.stat(passwd).st_dev, os.stat(passwd).st_ino) if pinned else None

        def setup(_wfd: int) -> None:
            real = mountns.mount_id_of

            def renamed_over_meanwhile(fd: int) -> int:  # runs after every source is opened, before any bind
                if not (Path(base) / "passwd+").exists():
                    (Path(base) / "passwd+").write_text("new\n")
                    os.rename(Path(base) / "passwd+", passwd)
                return real(fd)

            mountns.mount_id_of = renamed_over_meanwhile  # type: ignore[assignment]
            enter_private_root((Bind(str(passwd), pin=pin),))

        result = run_child(setup, lambda: passwd.read_text())
        if pinned:
            assert "was replaced while the private root was made" in result.report["error"], result.report
        else:
            assert result.report == {"value": "new\n"}


@pytest.mark.root
@pytest.mark.parametrize(("role", "resolves"), [("fs", False), ("keys", False), ("net", True), ("model", True)])
def test_a_doors_root_holds_only_the_etc_files_its_role_reads(role: str, resolves: bool) -> None:
    """The private root made from the door's real allowance: fs and keys find no /etc file at all (not even
    the account files every program could read before), the egress doors their resolver's, never passwd."""
    allowance = door_allowance(role, SessionLayout("0badc0de"), python_paths(), {})
    keep = tuple(Bind(path) for path in (*allowance.read, *allowance.write))
    wanted = ("/etc/passwd", "/etc/group", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/ld.so.cache", "/usr/bin/env")

    def setup(_wfd: int) -> None:
        enter_private_root(keep)

    def probe() -> object:
        return {path: os.path.exists(path) for path in wanted}

    assert run_child(lambda _wfd: None, probe).report["value"] == dict.fromkeys(wanted, True)  # control: the host
    seen = run_child(setup, probe).report["value"]
    assert seen == {"/etc/passwd": False, "/etc/group": False, "/etc/resolv.conf": resolves,
                    "/etc/nsswitch.conf": resolves, "/etc/ld.so.cache": resolves, "/usr/bin/env": True}
