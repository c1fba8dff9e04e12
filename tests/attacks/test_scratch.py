"""The app's scratch space, attacked in a real session of its own (app scratch_app.py, stdio not a terminal).

HOME and TMPDIR are one private tmpfs in the app's mount namespace, sized by `app.process.scratch_mb` and
`scratch_inodes`, mounted nosuid, nodev, noexec (launcher/kernel/mountns.py). It used to be a directory on
the host's /run: an app with a 256 MiB memory limit wrote 768 MiB and 30 000 files there. The layer behind
Landlock is shown as the suite does: root, in the host's mount namespace, reaches the same tmpfs through
/proc/<app>/root (no Landlock, no seccomp, every capability) and meets the mount's own flags.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.attacks._live import LiveSession
from tests.integration._session import basic_manifest, leftovers, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent
MEMORY_MB, SCRATCH_MB, SCRATCH_INODES = 96, 12, 2000
MIB = 1024 * 1024
OWN_INODES = 3  # the tmpfs's root and the two directories bound as HOME and TMPDIR


@dataclass
class ScratchRun:
    live: LiveSession
    sid: str = ""
    app_pid: int = 0
    shmem_when_full: int = 0
    host_listing: dict[str, list[str]] = field(default_factory=dict)  # the host's mount points while full
    host_modes: dict[str, tuple[int, int]] = field(default_factory=dict)  # (uid, mode) of each
    inside_listing: list[str] = field(default_factory=list)  # TMPDIR through /proc/<app>/root while full
    app_mounts: list[list[str]] = field(default_factory=list)  # the app's mountinfo lines for HOME and TMPDIR
    host_devices: set[str] = field(default_factory=set)  # major:minor of every mount in the host's namespace
    mnt_ns: str = ""
    as_root: dict[str, Any] = field(default_factory=dict)  # root's attempts through /proc/<app>/root
    ns_holders_after: list[int] = field(default_factory=list)
    leftovers_after: dict[str, list[str]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def probes(self) -> dict[str, dict[str, Any]]:
        return self.live.probes


def _outcome(action: Any) -> str | None:
    """None when `action` ran, else the errno it failed with (a program's run: None, or its errno)."""
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return None


def _exec_status(argv: list[str]) -> dict[str, Any]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except OSError as exc:
        return {"errno": errno.errorcode.get(exc.errno or 0)}
    return {"errno": None, "exit": done.returncode, "stderr": done.stderr.strip()[-200:]}


def _mnt_ns_holders(mnt_ns: str) -> list[int]:
    holders = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/mnt") == mnt_ns:
                    holders.append(int(entry))
            except OSError:
                continue  # gone meanwhile, or a kernel thread
    return holders


def _while_full(run: ScratchRun, tmp: str) -> None:
    """The app's TMPDIR is full: what its cgroup was charged, what the host's /run holds, what its root shows."""
    stats = Path(f"/sys/fs/cgroup/memory/sharness/{run.sid}/app/memory.stat").read_text().split("\n")
    run.shmem_when_full = next(int(line.split()[1]) for line in stats if line.startswith("shmem "))
    for name, path in (("home", run.probes["ready"]["home"]), ("tmp", tmp)):
        run.host_listing[name] = os.listdir(path)
        info = os.stat(path)
        run.host_modes[name] = (info.st_uid, stat.S_IMODE(info.st_mode))
    run.inside_listing = os.listdir(f"/proc/{run.app_pid}/root{tmp}")
    wanted = (run.probes["ready"]["home"], tmp)
    run.app_mounts = [line.split() for line in Path(f"/proc/{run.app_pid}/mountinfo").read_text().splitlines()
                      if line.split()[4] in wanted]
    run.host_devices = {line.split()[2] for line in Path("/proc/self/mountinfo").read_text().splitlines()}


def _as_root_through_its_root(run: ScratchRun, tmp: str) -> None:
    """Root reaches the app's tmpfs through /proc/<app>/root: exec, map, plant a device and a setuid program."""
    inside = f"/proc/{run.app_pid}/root{tmp}"
    run.as_root["exec"] = _exec_status([f"{inside}/true-copy"])
    run.as_root["loader"] = _exec_status([os.path.realpath("/lib64/ld-linux-x86-64.so.2"), f"{inside}/true-copy"])
    os.mknod(f"{inside}/planted-null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.chmod(f"{inside}/planted-null", 0o666)
    shutil.copyfile("/usr/bin/id", f"{inside}/planted-id")
    os.chmod(f"{inside}/planted-id", 0o4755)  # root's own file: a setuid-root program, were it anywhere else
    run.as_root["device_open"] = _outcome(lambda: os.close(os.open(f"{inside}/planted-null", os.O_RDWR)))
    run.as_root["setuid_exec"] = _exec_status([f"{inside}/planted-id", "-u"])


def _app_host_pid(sid: str) -> int:
    """The app's pid in the host's pid namespace (it is pid 2 of its own): the one process of its cgroup while
    it waits (its pid namespace's init is in none of the session's cgroups)."""
    procs = Path(f"/sys/fs/cgroup/pids/sharness/{sid}/app/cgroup.procs").read_text().split()
    assert len(procs) == 1, procs
    return int(procs[0])


def _drive(run: ScratchRun) -> None:
    ready = run.live.wait_probe("ready")
    run.sid, tmp = ready["sid"], ready["tmp"]
    run.app_pid = _app_host_pid(run.sid)
    run.mnt_ns = os.readlink(f"/proc/{run.app_pid}/ns/mnt")
    run.live.send("fill")
    run.live.wait_probe("filled")
    _while_full(run, tmp)
    run.live.send("inodes")
    run.live.wait_probe("counted")
    run.live.send("exec")
    run.live.wait_probe("dropped")
    _as_root_through_its_root(run, tmp)
    run.live.send("planted")
    run.live.wait_probe("done")
    run.summary = run.live.finish()
    run.ns_holders_after = _mnt_ns_holders(run.mnt_ns)
    run.leftovers_after = leftovers(run.sid)


@pytest.fixture(scope="module")
def scratch() -> Iterator[ScratchRun]:
    """One session whose app goes after its scratch space; everything it made is gone before a test reads it."""
    root = Path(tempfile.mkdtemp(prefix="sh-test-scratch-", dir="/var/lib"))
    root.chmod(0o755)
    live = None
    try:
        workspace = root / "ws"
        workspace.mkdir()
        document = basic_manifest(workspace, [sys.executable, str(HERE / "scratch_app.py")])
        document["app"]["process"] = {"max_memory_mb": MEMORY_MB, "max_pids": 32,  # type: ignore[index]
                                      "scratch_mb": SCRATCH_MB, "scratch_inodes": SCRATCH_INODES}
        live = LiveSession(write_manifest(root, document), root / "audit", root / "stderr")
        run = ScratchRun(live)
        _drive(run)
        yield run
    finally:
        if live is not None:
            live.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_home_and_tmpdir_are_one_writable_tmpfs_of_the_manifests_size(scratch: ScratchRun) -> None:
    """statvfs in the app: the size and inode count its manifest names; HOME writable, XDG dirs under it."""
    ready = scratch.probes["ready"]
    assert ready["same_device"] and ready["writable_home"], ready
    assert ready["size_bytes"] == SCRATCH_MB * MIB and ready["inodes"] == SCRATCH_INODES, ready
    assert ready["xdg_config"] == f"{ready['home']}/.config"


def test_writing_past_the_size_gives_enospc(scratch: ScratchRun) -> None:
    """1 MiB writes until the kernel refuses: ENOSPC once the 12 MiB are full (tmpfs size limit)."""
    filled = scratch.probes["filled"]
    assert filled["errno"] == "ENOSPC" and filled["written"] == SCRATCH_MB * MIB, filled


def test_the_tmpfs_pages_are_charged_to_the_apps_memory_cgroup(scratch: ScratchRun) -> None:
    """What the app wrote counts against its own memory limit (memory.stat shmem), not the host's disk."""
    assert scratch.shmem_when_full >= SCRATCH_MB * MIB, scratch.shmem_when_full


def test_creating_past_the_inode_count_gives_enospc(scratch: ScratchRun) -> None:
    """Empty files until the kernel refuses: ENOSPC after exactly the inodes left (nr_inodes less its own 3)."""
    counted = scratch.probes["counted"]
    assert counted["errno"] == "ENOSPC" and counted["created"] == SCRATCH_INODES - OWN_INODES, counted


def test_the_hosts_run_has_nothing_of_it(scratch: ScratchRun) -> None:
    """While TMPDIR held 12 MiB: the host's HOME and TMPDIR are empty mount points of root's (0555), the file is
    only in the app's root, and no mount of the host's namespace is the app's tmpfs."""
    assert scratch.host_listing == {"home": [], "tmp": []}
    assert scratch.host_modes == {"home": (0, 0o555), "tmp": (0, 0o555)}
    assert scratch.inside_listing == ["big"]
    devices = {line[2] for line in scratch.app_mounts}
    assert len(scratch.app_mounts) == 2 and len(devices) == 1, scratch.app_mounts
    assert not devices & scratch.host_devices


def test_the_mounts_are_nosuid_nodev_noexec_with_their_limits(scratch: ScratchRun) -> None:
    for line in scratch.app_mounts:
        flags, super_options = set(line[5].split(",")), line[-1].split(",")
        assert {"nosuid", "nodev", "noexec"} <= flags, line
        assert f"size={SCRATCH_MB * 1024}k" in super_options and f"nr_inodes={SCRATCH_INODES}" in super_options


def test_a_file_it_wrote_there_is_never_executed(scratch: ScratchRun) -> None:
    """execve of its own ELF, and of its own setuid copy: EACCES from Landlock (no EXECUTE right on a writable
    path). Behind it, root reaching the same file: EACCES again, the mount's noexec."""
    assert scratch.probes["exec.dropped"] == {"probe": "exec.dropped", "errno": "EACCES"}
    setuid = scratch.probes["exec.dropped_setuid"]
    assert setuid["set"] is True and setuid["errno"] == "EACCES", setuid
    assert scratch.as_root["exec"] == {"errno": "EACCES"}


def test_the_loader_cannot_map_it_executable(scratch: ScratchRun) -> None:
    """ld.so (an allowed program) runs, its mmap(PROT_EXEC) of the file fails: noexec (Landlock does not govern
    mmap); the same for root."""
    for seen in (scratch.probes["exec.loader_maps"], scratch.as_root["loader"]):
        assert seen["errno"] is None and seen["exit"] == 127, seen
        assert "failed to map segment from shared object" in seen["stderr"], seen


def test_a_device_or_setuid_file_there_is_inert(scratch: ScratchRun) -> None:
    """mknod by the app: EACCES (Landlock grants no MAKE_CHAR; no CAP_MKNOD behind it). A 0666 char device
    root planted there: EACCES on open, for the app and for root (nodev). A setuid-root program root planted:
    EACCES for the app (Landlock) and for root (noexec; nosuid is in the flags, but noexec is met first)."""
    assert scratch.probes["mknod.char"]["errno"] == "EACCES"
    assert scratch.probes["planted.device_open"]["errno"] == "EACCES"
    assert scratch.as_root["device_open"] == "EACCES"
    assert scratch.probes["planted.setuid_exec"]["errno"] == "EACCES"
    assert scratch.as_root["setuid_exec"] == {"errno": "EACCES"}


def test_the_tmpfs_dies_with_the_session(scratch: ScratchRun) -> None:
    """No process is left in the app's mount namespace, so the kernel freed it and its tmpfs (nothing names the
    namespace: no nsfs bind, no fd); the session left nothing, and its exit code is the app's."""
    assert scratch.ns_holders_after == []
    assert scratch.leftovers_after == {}
    assert scratch.summary["exit_code"] == 0, scratch.summary
