"""SIGKILL the launcher at each stage of creation and while the app runs; gc leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    new_leftovers,
    pids_with_uids,
    session_dirs,
    session_owner,
    session_uids,
    wait_for_session_dir,
    write_manifest,
)

pytestmark = pytest.mark.root

# Kill when the journal's last entry is of this kind (creation stages in order), or once the app runs.
STAGES = ["dir", "user", "group", "netns", "cgroup", "file", "pid", "app"]


def _journal_kinds(sid_dir: Path) -> list[str]:
    try:
        text = (sid_dir / "journal").read_text()
    except OSError:
        return []
    kinds = []
    for line in text.splitlines():
        try:
            kinds.append(json.loads(line)["kind"])
        except (ValueError, KeyError):
            break
    return kinds


def _kill_at(
    stage: str, launcher: subprocess.Popen[bytes], stderr: Path, timeout_s: float = 30
) -> tuple[str, set[int]]:
    """Watch the newest session journal and SIGKILL the launcher when it reaches `stage`."""
    deadline = time.monotonic() + timeout_s
    sid_dir: Path | None = None
    uids: set[int] = set()
    while time.monotonic() < deadline:
        if sid_dir is None:
            candidates = [p for p in session_dirs() if session_owner(p) == launcher.pid]
            sid_dir = candidates[0] if candidates else None
        if sid_dir is not None:
            uids |= session_uids(sid_dir.name)
            kinds = _journal_kinds(sid_dir)
            wanted = kinds.count("pid") >= 3 if stage == "app" else stage in kinds
            if wanted:
                if stage == "app":
                    time.sleep(0.3)
                os.kill(launcher.pid, signal.SIGKILL)
                launcher.wait()
                return sid_dir.name, uids | session_uids(sid_dir.name)
        if launcher.poll() is not None:
            said = stderr.read_text(errors="replace")[-2000:]
            raise AssertionError(f"the launcher ended before stage {stage}: {said}")
        time.sleep(0.0005)
    raise AssertionError(f"stage {stage} never reached")


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_at_each_stage_then_gc_leaves_nothing(stage: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chmod(tmp_path, 0o755)
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/sleep", "60"]))
    digest = manifest_hash(manifest)
    before = leftovers()
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as stderr_file:
        launcher = subprocess.Popen(
            [*LAUNCHER, "run", str(manifest), "--expect-hash", digest, "--audit-dir", str(tmp_path / "audit"),
             "--best-effort"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr_file,
        )
    try:
        sid, uids = _kill_at(stage, launcher, stderr)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    gc = subprocess.run([*LAUNCHER, "gc", "--json"], capture_output=True, text=True, timeout=60)
    assert gc.returncode == 0, gc.stdout + gc.stderr
    assert leftovers(sid) == {}
    assert new_leftovers(before) == {}
    deadline = time.monotonic() + 5
    while pids_with_uids(uids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with_uids(uids) == []



DOUBLE_FORK = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["/bin/sleep", "3600"])
    os._exit(0)
os.wait()
print("started", flush=True)
time.sleep(600)
"""


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def _sleeper_and_init(sid: str, timeout_s: float = 30) -> tuple[int, int]:
    """Pidfds of the app's double-forked sleeper, once it runs /bin/sleep in the app's cgroup, and of the
    app's parent, its pid namespace's init (the session is live: no pid here is reused meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        procs = _read(f"/sys/fs/cgroup/pids/sharness/{sid}/app/cgroup.procs").decode().split()
        sleeping = {pid: _read(f"/proc/{pid}/cmdline").startswith(b"/bin/sleep\0") for pid in procs}
        sleepers = [pid for pid, asleep in sleeping.items() if asleep]
        apps = [pid for pid, asleep in sleeping.items() if not asleep]
        if len(sleepers) == 1 and len(apps) == 1:
            status = _read(f"/proc/{apps[0]}/status").decode()
            init = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))
            return os.pidfd_open(int(sleepers[0])), os.pidfd_open(init)
        time.sleep(0.01)
    raise AssertionError("the app's sleeper never ran")


def _ended(pidfd: int) -> bool:
    return bool(select.select([pidfd], [], [], 0)[0])


def test_the_session_does_not_outlive_its_launcher(tmp_path: Path) -> None:
    """Issue 19.6: the app leaves a sleeper (setsid, double fork) and the launcher is SIGKILLed. The doors
    die by their parent-death signal; so does the app's pid namespace init, and with it the kernel kills
    every process of the namespace, the sleeper too, before any gc. Then gc removes the rest."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chmod(tmp_path, 0o755)
    manifest = write_manifest(tmp_path, basic_manifest(workspace, [sys.executable, "-c", DOUBLE_FORK]))
    launcher = subprocess.Popen(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
         str(tmp_path / "audit")], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert launcher.stdout is not None
        assert launcher.stdout.readline() == b"started\n"
        sid = wait_for_session_dir(launcher.pid)
        (sleeper, init), uids = _sleeper_and_init(sid), session_uids(sid)
        launcher.kill()
        launcher.wait()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    try:
        deadline = time.monotonic() + 10
        while not _ended(init) and time.monotonic() < deadline:
            time.sleep(0.01)
        # The init's exit completes only once the kernel has killed and reaped the rest of its namespace:
        # the sleeper is gone by the time the init is, whatever else (another launcher's sweep) runs later.
        assert _ended(init), "the app's init outlived the launcher"
        assert _ended(sleeper), "the app's double-forked sleeper outlived the launcher and its init"
    finally:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(sleeper, signal.SIGKILL)  # only reached when it lived: leave nothing
        os.close(sleeper)
        os.close(init)
        gc = subprocess.run([*LAUNCHER, "gc", "--json"], capture_output=True, text=True, timeout=60)
    assert gc.returncode == 0, gc.stdout + gc.stderr
    assert leftovers(sid) == {}
    assert pids_with_uids(uids) == [] or _only_zombies(pids_with_uids(uids))


def _only_zombies(pids: list[int]) -> bool:
    """Processes that ended but whose parent (the host's init, after the launcher died) has not reaped them."""
    states = []
    for pid in pids:
        with contextlib.suppress(FileNotFoundError):
            states.append(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0])
    return all(state == "Z" for state in states)
