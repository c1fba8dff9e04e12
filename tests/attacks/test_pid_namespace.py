"""What the app sees of the host's processes and of /proc (issue 10, item 11), in a real session of its
own, run twice (stdio on pipes, then on a terminal): the app is pidns_app.py.

- The app is pid 2 of a pid namespace of its own, whose init (pid 1, launcher/lifecycle/app_init.py) is
  the launcher's child. kill(pid, 0) over the host's whole pid range finds its own namespace's pids only:
  every host pid (the launcher, the doors, its own init by its host pid) is ESRCH, and so is pidfd_open.
  The same attempts as the app's uid in the host's pid namespace find each one (EPERM, or an fd).
- Its init is the app's uid in another Landlock domain, not dumpable: signals and pidfd signals from the
  app are EPERM (Landlock scoping), pidfd_getfd EPERM (the ptrace check), and /proc/1 is not listed.
- /proc is a proc of the app's namespace with subset=pid: its host-wide files (interrupts, key-users,
  meminfo, stat, sys/, mounts) are absent (ENOENT); as the app's uid in the host's /proc they are readable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import as_user
from tests.attacks._live import LiveSession
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import basic_manifest, leftovers, pids_with_uids, until_init_waits, write_manifest

pytestmark = pytest.mark.root
HERE = Path(__file__).parent


@dataclass
class PidnsRun:
    """What the app reported, and what the test saw of the session's processes from the host."""

    stdio: str = "pipes"
    sid: str = ""
    app_uid: int = 0
    host_pids: dict[str, int] = field(default_factory=dict)  # launcher, fs, keys, init, app (host numbers)
    host_status: dict[str, dict[str, str]] = field(default_factory=dict)  # init's and app's /proc/<pid>/status
    init_cgroup: str = ""
    alive_during_scan: dict[str, bool] = field(default_factory=dict)
    pid_max: int = 0
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    outside: dict[str, dict[str, Any]] = field(default_factory=dict)  # as the app's uid, host pid ns and /proc
    summary: dict[str, Any] = field(default_factory=dict)
    left_running: list[int] = field(default_factory=list)


def _manifest(root: Path) -> Path:
    workspace = root / "ws"
    workspace.mkdir()
    return write_manifest(root, basic_manifest(workspace, [sys.executable, str(HERE / "pidns_app.py")]))


def _status(pid: int) -> dict[str, str]:
    text = Path(f"/proc/{pid}/status").read_text()
    return {key: value.strip() for key, value in (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def _cgroup_procs(sid: str, role: str) -> list[int]:
    return [int(pid) for pid in Path(f"/sys/fs/cgroup/pids/sharness/{sid}/{role}/cgroup.procs").read_text().split()]


def _host_pids(live: LiveSession, sid: str) -> dict[str, int]:
    (app,) = _cgroup_procs(sid, "app")
    init = int(_status(app)["PPid"])
    pids = {"launcher": live.proc.pid, "init": init, "app": app}
    for door in ("fs", "keys"):
        (pids[door],) = _cgroup_procs(sid, door)
    return pids


def _outside(run: PidnsRun) -> dict[str, dict[str, Any]]:
    """pidns_app.py's targeted attempts as the app's uid (its own user, its groups) in the host's pid ns."""
    done = subprocess.run([*as_user.argv(f"sh-{run.sid}-app", init_groups=True), sys.executable,
                           str(HERE / "pidns_app.py"), "outside", json.dumps(run.host_pids)],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"probe"')]
    return {line["probe"]: line for line in lines}


def _drive(live: LiveSession, run: PidnsRun) -> None:
    run.sid = live.wait_probe("ready")["sid"]
    run.host_pids = _host_pids(live, run.sid)
    until_init_waits(run.host_pids["init"])  # confined: it has the app's uid by now
    run.host_status = {role: _status(run.host_pids[role]) for role in ("init", "app")}
    run.app_uid = int(run.host_status["app"]["Uid"].split()[0])
    run.init_cgroup = Path(f"/proc/{run.host_pids['init']}/cgroup").read_text()
    run.pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    live.send(json.dumps({"pids": run.host_pids, "pid_max": run.pid_max}))
    live.wait_probe("done", timeout_s=120)
    run.alive_during_scan = {name: Path(f"/proc/{pid}").exists() for name, pid in run.host_pids.items()}
    run.outside = _outside(run)
    live.send("end")
    run.summary = live.finish()
    run.probes = live.probes
    run.left_running = pids_with_uids({run.app_uid})


@pytest.fixture(scope="module", params=["pipes", "pty"])
def pidns(request: pytest.FixtureRequest) -> Iterator[PidnsRun]:
    """The session, run to its end; once with the launcher's stdio on pipes, once on a terminal."""
    if os.geteuid() != 0:
        pytest.skip("needs root on a real kernel: run `sudo make test` to watch the kernel refuse")
    root = Path(tempfile.mkdtemp(prefix="sh-test-pidns-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    run = PidnsRun(stdio=request.param)
    live: LiveSession | None = None
    try:
        live = LiveSession(_manifest(root), root / "audit", root / "stderr", tty=request.param == "pty")
        _drive(live, run)
        yield run
    finally:
        if live is not None:
            live.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_the_app_ran_with_the_stdio_asked_for(pidns: PidnsRun) -> None:
    assert pidns.probes["ready"]["tty"] is (pidns.stdio == "pty")


def test_the_app_is_pid_2_under_its_own_init(pidns: PidnsRun) -> None:
    """getpid() 2, getppid() 1, and one level in NSpid (its proc is its namespace's). From the host: the
    app's NSpid is (host pid, 2), the init's (host pid, 1), the init is the launcher's child."""
    ready = pidns.probes["ready"]
    assert (ready["pid"], ready["ppid"], ready["nspid"]) == (2, 1, ["2"])
    assert pidns.host_status["app"]["NSpid"].split() == [str(pidns.host_pids["app"]), "2"]
    assert pidns.host_status["init"]["NSpid"].split() == [str(pidns.host_pids["init"]), "1"]
    assert int(pidns.host_status["init"]["PPid"]) == pidns.host_pids["launcher"]


def test_the_init_has_the_apps_uid_but_not_its_cgroup(pidns: PidnsRun) -> None:
    """Never the app's OOM victim, no pid of its budget: the init is in no cgroup of the session's."""
    assert int(pidns.host_status["init"]["Uid"].split()[0]) == pidns.app_uid
    assert f"sharness/{pidns.sid}" not in pidns.init_cgroup


def test_kill_0_over_the_whole_pid_range_finds_only_its_own_namespace(pidns: PidnsRun) -> None:
    """Every pid 1..pid_max: ESRCH but for itself (2), its child, and its init (1: EPERM, Landlock scoping),
    while the launcher, the doors and the init's host pid were alive throughout (checked after the scan)."""
    scanned = pidns.probes["pidns.scan"]
    assert scanned["scanned"] == pidns.pid_max
    assert scanned["found"] == {"1": "EPERM", "2": None, str(scanned["child"]): None}
    assert pidns.alive_during_scan == dict.fromkeys(pidns.host_pids, True)


@pytest.mark.parametrize("target", ["launcher", "fs", "keys", "init", "app"])
def test_host_pids_are_esrch_in_the_namespace_and_found_outside_it(pidns: PidnsRun, target: str) -> None:
    """kill(pid, 0) and pidfd_open(pid) by host pid: ESRCH (the pid namespace). The control, as the app's
    uid in the host's pid namespace: kill says EPERM (it exists) or succeeds, pidfd_open opens it."""
    assert pidns.probes[f"pidns.kill0.{target}"]["errno"] == "ESRCH"
    assert pidns.probes[f"pidns.pidfd_open.{target}"]["errno"] == "ESRCH"
    assert pidns.outside[f"pidns.kill0.{target}"]["errno"] in ("EPERM", None)
    assert pidns.outside[f"pidns.pidfd_open.{target}"]["result"] == "'opened'"


def test_the_app_cannot_signal_or_rob_its_init(pidns: PidnsRun) -> None:
    """kill(1) and pidfd_send_signal: EPERM, Landlock signal scoping (the init is outside the app's domain;
    behind it, a namespace's init ignores SIGKILL from inside and SIGTERM from any pid but 0). pidfd_open(1)
    opens (a pid number is not a permission), pidfd_getfd is EPERM (ptrace check: the init is not
    dumpable), and /proc/1 is not there (hidepid=invisible hides what the ptrace check refuses)."""
    for probe in ("init.kill_sigkill", "init.kill_sigterm", "init.pidfd_sigkill", "init.pidfd_getfd"):
        assert pidns.probes[probe]["errno"] == "EPERM", pidns.probes[probe]
    assert pidns.probes["init.pidfd_open"]["errno"] is None
    assert pidns.probes["init.proc_status"]["errno"] == "ENOENT"
    assert pidns.summary["exit_code"] == 0 and pidns.probes["end"]["line"] == "end"


def test_proc_lists_only_the_apps_own_processes(pidns: PidnsRun) -> None:
    assert pidns.probes["proc.listing"]["entries"] == ["2", "self", "thread-self"]


@pytest.mark.parametrize("name", ["interrupts", "key-users", "meminfo", "stat", "sys/kernel/pid_max", "mounts"])
def test_procs_host_wide_files_are_absent(pidns: PidnsRun, name: str) -> None:
    """ENOENT: proc subset=pid has process directories only (its own status reads)."""
    assert pidns.probes[f"proc.{name}"]["errno"] == "ENOENT"
    assert pidns.probes["control.proc_self_status"]["errno"] is None


@pytest.mark.parametrize("name", ["interrupts", "key-users"])
def test_outside_the_private_proc_the_same_files_read(pidns: PidnsRun, name: str) -> None:
    assert pidns.outside[f"proc.{name}"]["errno"] is None


def test_nothing_of_the_session_is_left(pidns: PidnsRun) -> None:
    assert pidns.summary["teardown_errors"] == []
    assert leftovers(pidns.sid) == {}
    assert pidns.left_running == []
