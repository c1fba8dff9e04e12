"""The workspace mount against direct, in one run: 4 KiB and 128 KiB writes (fsync at the end), 128 KiB reads,
small-file creates and `git status` on a committed 10 000-file tree, and the small-file creates' floor on pyfuse3
(bench/_fuse_floor.py: the door's serving loop with handlers that do nothing). The mount's figures come from the
app of a real session (app.workspace "mount": the fs door serving it, every row and the audit on); direct ones from
this process on a directory of the same file system, with the same code (bench/_mount_workload.py). Needs root and
FUSE.
CPU per operation beside the rates: the writer's own (`*_app_us_per_*`, both sides) and the fs door's
(`*_door_us_per_*`, read from its /proc/<pid>/schedstat while the session runs).

Both sides run on a file system made for the run: a fresh ext4 (with its journal, as mkfs makes it) on a loop
image under /var/tmp, unmounted and removed at the end. A file system that has been in use measures its history:
ext4 without a journal (this machine's root) skips, at every inode it allocates, each inode of the group deleted in
the last minutes (`recently_deleted`), so a create cost 30 µs or 350 µs depending on what another program (or
the bench's previous run) removed there (docs/decisions/fs-mount.md, "mountquick"). `--scratch DIR` runs on a
directory of an existing file system instead. Dirty pages are written back (sync) before each side starts.

`--one-cpu N` pins the session's app and its fs door (every thread of each) to CPU N as soon as the bench finds
them: not what a session does, but what putting the two on one CPU would give. On this KVM guest each FUSE round
trip between two CPUs costs a cross-CPU wake-up each way, which is most of a 4 KiB write's cost for both processes
(docs/decisions/bench.md, "mountreq"). The result then says `fs_mount_one_cpu`.

    python -m bench.fs_mount_bench [--quick] [--scratch DIR] [--one-cpu N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import _fuse_floor, _mount_workload

RATIOS = (
    ("fs_mount_write_4k_mib_s_mount", "fs_mount_write_4k_mib_s_direct"),
    ("fs_mount_write_128k_mib_s_mount", "fs_mount_write_128k_mib_s_direct"),
    ("fs_mount_read_128k_mib_s_mount", "fs_mount_read_128k_mib_s_direct"),
    ("fs_mount_small_files_per_s_mount", "fs_mount_small_files_per_s_direct"),
    ("fs_mount_small_files_per_s_mount", "fs_mount_small_files_per_s_floor"),
    ("fs_mount_git_status_s_direct", "fs_mount_git_status_s_mount"),  # time: direct over mount, higher is better
)
OWNER = 65534  # the workspace's owner (the fs door runs as it)
LAUNCHER = str(Path(sys.executable).parent / "sharness-launch")
WORKLOAD = str(Path(_mount_workload.__file__).resolve())
TREE_DIRS, TREE_FILES = 100, 100
SAMPLE_S = 0.005  # how often the fs door's CPU time is read while the session runs
FUSE_DEVICE = "/dev/fuse"


def _tree(root: Path) -> None:
    """A committed repository of TREE_DIRS × TREE_FILES small files."""
    root.mkdir(parents=True)
    for d in range(TREE_DIRS):
        sub = root / f"d{d:03d}"
        sub.mkdir()
        for f in range(TREE_FILES):
            (sub / f"f{f:03d}.txt").write_text(f"{d} {f}\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=bench", "-c", "user.email=bench@sharness.test", "commit", "-qm", "tree"]):
        subprocess.run(["git", *command], cwd=root, env=env, check=True, capture_output=True)


def _manifest(workspace: Path, quick: bool) -> dict[str, Any]:
    return {
        "sharness": "manifest/v0",
        "session": {"name": "mount-bench", "trust_domain": "bench.sharness.test", "ttl_s": 1800},
        "workspace": str(workspace),
        "app": {"argv": [sys.executable, WORKLOAD, str(workspace), "1" if quick else "0"],
                "files": {"read": [WORKLOAD]}, "workspace": "mount",
                "process": {"max_memory_mb": 1024, "max_pids": 64}},
        "doors": {"fs": {"refuse_secrets": True, "max_file_bytes": 1 << 30, "max_total_bytes": 1 << 34,
                         "max_files": 100_000}},
        "edges": [["app", "fs"]],
    }


class DoorCpu:
    """Samples of the fs door's CPU time while a session runs: the process under `launcher` holding /dev/fuse
    (other helpers' sessions may hold one too), its /proc/<pid>/schedstat every SAMPLE_S."""

    def __init__(self, launcher: int, one_cpu: int | None = None) -> None:
        self.launcher = launcher
        self.one_cpu = one_cpu  # pin the door and the app to this CPU once both are found (--one-cpu)
        self.samples: list[tuple[float, int]] = []  # (wall clock, CPU ns)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        door = None
        pinned = self.one_cpu is None
        while not self._stop.wait(SAMPLE_S if door and pinned else 10 * SAMPLE_S):
            door = door or _fuse_holder_under(self.launcher)
            if not pinned and door is not None and (app := _workload_under(self.launcher)) is not None:
                assert self.one_cpu is not None
                pin_tasks((door, app), self.one_cpu)
                pinned = True
            try:
                with open(f"/proc/{door}/schedstat", encoding="ascii") as stat:
                    self.samples.append((time.time(), int(stat.read().split()[0])))
            except (OSError, TypeError):
                door = None if self.samples else door

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def us_per_op(self, span: list[float]) -> float | None:
        """CPU µs the door spent per operation over [start, end, operations]: from the last sample before the
        phase to the first after it (at most SAMPLE_S beyond each end); None when the samples do not bracket it."""
        start, end, operations = span
        inside = [cpu for at, cpu in self.samples if start <= at <= end]
        before = [cpu for at, cpu in self.samples if at < start][-1:]
        after = [cpu for at, cpu in self.samples if at > end][:1]
        if not (before and after and inside):
            return None
        return (after[0] - before[0]) / 1000 / operations


def pin_tasks(pids: tuple[int, ...], cpu: int) -> None:
    """Every thread of each of `pids` on `cpu` (threads made later inherit it)."""
    for pid in pids:
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(int(task), {cpu})


def _workload_under(ancestor: int) -> int | None:
    """The session's app: the process under `ancestor` running the bench's workload."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _runs_workload(entry) and _descends(int(entry), ancestor):
            return int(entry)
    return None


def _runs_workload(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return WORKLOAD.encode() in cmdline.read().split(b"\0")
    except OSError:
        return False


def _fuse_holder_under(ancestor: int) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _descends(int(entry), ancestor) and _holds_fuse(entry):
            return int(entry)
    return None


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
        if pid == ancestor:
            return True
    return False


def _holds_fuse(pid: str) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == FUSE_DEVICE for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _through_the_mount(scratch: Path, quick: bool, one_cpu: int | None = None) -> dict[str, Any]:
    workspace = scratch / "ws"
    _tree(workspace / "tree")
    subprocess.run(["chown", "-R", f"{OWNER}:{OWNER}", str(workspace)], check=True)
    os.sync()  # the tree's dirty pages (and the direct side's) written back before the session starts
    manifest = scratch / "manifest.json"
    manifest.write_text(json.dumps(_manifest(workspace, quick)))
    digest = subprocess.run([LAUNCHER, "hash", str(manifest)], capture_output=True, text=True, check=True)
    proc = subprocess.Popen([LAUNCHER, "run", str(manifest), "--expect-hash", digest.stdout.strip(), "--audit-dir",
                             str(scratch / "audit"), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    door = DoorCpu(proc.pid, one_cpu)
    try:
        stdout, stderr = proc.communicate(timeout=1800)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        door.stop()
    line = next((line for line in stdout.splitlines() if line.startswith('{"probe"')), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"the mount bench session failed ({proc.returncode}): {stderr[-2000:]}")
    figures = json.loads(line)
    figures.pop("probe")
    for name, span in figures.pop(_mount_workload.SPANS).items():
        per_op = door.us_per_op(span)
        if per_op is not None:
            figures[f"{name}_door_us_per_{'file' if name == 'small_files' else 'write'}"] = per_op
    return dict(figures)


def _direct(scratch: Path, quick: bool) -> dict[str, float]:
    directory = scratch / "direct"
    _tree(directory / "tree")
    os.sync()  # the tree's dirty pages written back before the figures, as before the mount's
    figures = _mount_workload.workload(str(directory), quick)
    figures.pop(_mount_workload.SPANS)
    return figures


@contextlib.contextmanager
def _fresh_file_system(quick: bool) -> Iterator[Path]:
    """A directory on an ext4 made for this run (journal, inode tables written at mkfs: no lazy init running
    beside the figures), on a sparse loop image under /var/tmp; unmounted and removed afterwards."""
    holder = Path(tempfile.mkdtemp(prefix="sharness-bench-mount-", dir="/var/tmp"))
    image, point = holder / "fs.img", holder / "fs"
    mounted = False
    try:
        with open(image, "wb") as sparse:
            sparse.truncate((2 if quick else 4) << 30)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0",
                        str(image)], check=True, capture_output=True)
        point.mkdir()
        subprocess.run(["mount", "-o", "loop,nosuid,nodev", str(image), str(point)], check=True, capture_output=True)
        mounted = True
        os.chmod(point, 0o755)
        yield point
    finally:
        if mounted:
            done = subprocess.run(["umount", str(point)], capture_output=True)
            if done.returncode != 0:  # still busy: detach now, the loop device goes with the last user
                subprocess.run(["umount", "-l", str(point)], capture_output=True)
        shutil.rmtree(holder, ignore_errors=True)


def run(quick: bool, scratch_dir: str | None = None, one_cpu: int | None = None) -> dict[str, Any]:
    """Direct first, then through the mount, on the same file system: a fresh ext4 (or `scratch_dir`'s); the
    session's app and fs door on CPU `one_cpu` when given."""
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        return {"fs_mount_skipped": "needs root and /dev/fuse"}
    place = contextlib.nullcontext(Path(scratch_dir)) if scratch_dir else _fresh_file_system(quick)
    with place as base:
        scratch = Path(tempfile.mkdtemp(prefix="sharness-bench-mount-", dir=base))
        os.chmod(scratch, 0o755)
        try:
            direct = _direct(scratch, quick)
            floor = _fuse_floor.small_files(_mount_workload.small_file_count(quick))
            mount = _through_the_mount(scratch, quick, one_cpu)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    result: dict[str, Any] = {
        "fs_mount_small_files_per_s_floor": round(floor["per_s"], 4),
        "fs_mount_small_files_floor_server_us_per_file": round(floor["server_us_per_file"], 4),
        "fs_mount_small_files_floor_app_us_per_file": round(floor["app_us_per_file"], 4),
    }
    for key in direct:
        result[f"fs_mount_{key}_direct"] = round(direct[key], 4)
    for key in mount:  # the door's CPU has no direct counterpart
        result[f"fs_mount_{key}_mount"] = round(mount[key], 4)
    for figure, baseline in RATIOS:
        result[f"{figure}_over_{baseline.rsplit('_', 1)[-1]}_ratio"] = round(result[figure] / result[baseline], 3)
    if one_cpu is not None:
        result["fs_mount_one_cpu"] = one_cpu
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--scratch", metavar="DIR", help="run on this directory's file system, not a fresh ext4")
    parser.add_argument("--one-cpu", metavar="N", type=int,
                        help="pin the session's app and fs door to CPU N (what co-location would give)")
    args = parser.parse_args()
    for key, value in run(args.quick, args.scratch, args.one_cpu).items():
        print(f"{key:52} {value}")


if __name__ == "__main__":
    main()
