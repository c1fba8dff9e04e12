"""The private mount namespace: host runtime dirs hidden but the kept paths, other users' processes invisible."""

from __future__ import annotations

import errno
import os
import socket
import tempfile
from pathlib import Path

import pytest
from kernel_child import run_child

from launcher.kernel.mountns import ScratchMount, enter_private_root, minimal_paths, tmpfs_options


def test_minimal_paths_drops_nested_paths_proc_and_the_root() -> None:
    paths = ("/usr", "/usr/lib/python3.11", "/run/sharness/ab/app", "/run/sharness/ab/app/tmp", "/tmp/ws/",
             "/etc/passwd", "/etc", "/proc", "/proc/self", "/", "/runaway")
    assert minimal_paths(paths) == ("/etc", "/run/sharness/ab/app", "/runaway", "/tmp/ws", "/usr")
    assert minimal_paths(()) == ()


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
            enter_private_root((str(private),), scratch=scratch)
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
    base = Path(tempfile.mkdtemp(prefix="sh-test-mnt-", dir="/tmp"))
    try:
        kept = base / "kept"
        kept.mkdir()
        (kept / "note").write_text("visible")
        host_socket = socket.socket(socket.AF_UNIX)
        host_socket.bind(str(base / "host.sock"))
        host_socket.listen(1)
        os.chmod(base / "host.sock", 0o666)
        victim = os.fork()
        if victim == 0:
            os.setresuid(65534, 65534, 65534)
            os.pause()

        def setup(_wfd: int) -> None:
            enter_private_root((str(kept),))
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
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
