"""The adversarial suite's real sessions, run once for every test in this folder.

Two sessions run side by side. Session A's app is attack_app.py: it tries everything the tests then judge.
Session B's app is fill_app.py: it fills its own cgroup while the test, from outside, uses B's doors; B is
also "the other session" whose socket, SVID file and certificate A goes after.

Each component runs in a private root holding only its own paths (launcher/kernel/mountns.py), so most of what
the app goes after is not there (ENOENT). as_app_outside.py runs twice: with the app's uid and groups (DAC,
the ptrace check), and inside the app's Landlock rules too (Landlock), both in the host's mounts.

The scratch root (workspaces, audit root) lies under /var/lib, where a person's workspace (/home) and the
real audit root (/var/lib/sharness) lie. Host service sockets: one under /tmp (as /tmp/.X11-unix), one
under /var/lib (as MariaDB's on RHEL), one inside the app's own read path (a project's PostgreSQL socket).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from doors.client import DoorClient, DoorRefused
from launcher.kernel import netns
from launcher.lifecycle.session import python_paths
from launcher.policy.confine_plan import SYSTEM_READ, app_allowance
from launcher.policy.layout import SessionLayout
from tests import as_user
from tests.attacks._live import LiveSession
from tests.integration._session import basic_manifest, write_manifest

HERE = Path(__file__).parent
TRUST_DOMAIN = "test.sharness.test"
FILL_MEMORY_MB = 128
FILL_PIDS = 32
SCRATCH_PARENT = "/var/lib"  # where the real audit root lies; a workspace under /home alike


@dataclass
class Outside:
    """What the test itself did to session B's doors while B's cgroup was full."""

    fs_write: dict[str, Any] = field(default_factory=dict)
    keys_refusal: dict[str, Any] = field(default_factory=dict)


@dataclass
class Terminal:
    """The person's terminal (session A's stdin) as the test saw it from its master side."""

    modes_during: list[Any] = field(default_factory=list)  # after the app set its terminal's modes
    modes_after: list[Any] = field(default_factory=list)  # after the launcher ended
    screen: bytes = b""  # what reached it, up to the app's plain end marker


@dataclass
class AttackRun:
    root: Path
    workspace_a: Path
    workspace_b: Path
    audit_root: Path
    b: LiveSession
    host_socket: Path
    a_session: LiveSession | None = None
    sid_a: str = ""
    sid_b: str = ""
    summary_a: dict[str, Any] = field(default_factory=dict)
    summary_b: dict[str, Any] = field(default_factory=dict)
    outside: Outside = field(default_factory=Outside)
    door_pids_a: dict[str, int] = field(default_factory=dict)
    cmdline_secret: str = ""
    cmdline_secret_pid: int = 0
    outside_as_app: dict[str, dict[str, Any]] = field(default_factory=dict)  # as the app's uid, host mounts
    outside_landlocked: dict[str, dict[str, Any]] = field(default_factory=dict)  # ... in its Landlock rules too
    terminal: Terminal = field(default_factory=Terminal)
    stderr_a: str = ""
    seconds: float = 0.0

    @property
    def a(self) -> LiveSession:
        """Session A (the attack app), once it has started."""
        assert self.a_session is not None, "session A never started"
        return self.a_session

    def audit(self, sid: str) -> list[dict[str, Any]]:
        text = (self.audit_root / sid / "audit.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines()]


def _door_pid(sid: str, role: str) -> int:
    procs = Path(f"/sys/fs/cgroup/pids/sharness/{sid}/{role}/cgroup.procs").read_text().split()
    assert len(procs) == 1, f"door {role} of {sid}: processes {procs}"
    return int(procs[0])


def _wait_path(path: Path, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.01)


def _manifests(root: Path) -> tuple[Path, Path]:
    ws_a, ws_b, shared = root / "ws-a", root / "ws-b", root / "shared"
    for path in (ws_a, ws_b, shared, root / "a", root / "b"):
        path.mkdir()
        path.chmod(0o755)
    (ws_a / "link_out").symlink_to("/etc/passwd")  # the door must judge where a path really leads
    (ws_a / "dir_out").symlink_to("/etc")
    (ws_a / ".git" / "hooks").mkdir(parents=True)
    (ws_a / ".git" / "config").write_text("[core]\n")
    (ws_a / "bin").mkdir()
    for path in (ws_a / "bin", ws_a / ".git", ws_a / ".git" / "hooks", ws_a / ".git" / "config"):
        os.chown(path, 65534, 65534)
    a = basic_manifest(ws_a, [sys.executable, str(HERE / "attack_app.py")])
    a["app"]["files"]["read"] = [str(shared)]  # type: ignore[index]
    a["doors"]["fs"]["exec"] = ["bin"]  # type: ignore[index]  # the door may write bin/tool.sh executable
    b = basic_manifest(ws_b, [sys.executable, str(HERE / "fill_app.py")])
    b["app"]["process"] = {"max_memory_mb": FILL_MEMORY_MB, "max_pids": FILL_PIDS}  # type: ignore[index]
    return write_manifest(root / "a", a), write_manifest(root / "b", b)


def _outside_on_b(run: AttackRun) -> None:
    """As root, outside B's cgroups, with B's own app SVID: write through fs; replay it to keys (no edge)."""
    private = f"/run/sharness/{run.sid_b}/app"
    args = (f"{private}/svid.pem", f"{private}/bundle.pem", TRUST_DOMAIN, run.sid_b)
    doors = f"/run/sharness/{run.sid_b}/doors"
    with DoorClient.from_files("fs", f"{doors}/fs.sock", *args, timeout_s=20) as fs:
        answer = fs.request("PUT", "/v0/fs/files/outside.txt", body=b"written from outside while B was full\n")
        run.outside.fs_write = {"status": answer.status, "body": answer.json()}
    try:
        with DoorClient.from_files("keys", f"{doors}/keys.sock", *args, timeout_s=20) as keys:
            run.outside.keys_refusal = {"answered": keys.hello()}
    except DoorRefused as refused:
        refusal = refused.refusal
        run.outside.keys_refusal = {"who": refusal.who, "reason": refusal.detail, "row": refusal.row}


@contextlib.contextmanager
def _abstract_listener_in(netns_name: str, name: str) -> Iterator[socket.socket]:
    """An abstract unix listener bound by this (unconfined) process inside another network namespace."""
    with netns.entered(netns_name):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with netns.entered(netns_name):
            sock.bind("\0" + name)
        sock.listen(8)
        yield sock
    finally:
        sock.close()


@contextlib.contextmanager
def _host_listener(path: Path) -> Iterator[socket.socket]:
    """A host service's socket, mode 0666 in the host's network namespace (like /run/dbus/system_bus_socket)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        path.chmod(0o666)
        sock.listen(8)
        yield sock
    finally:
        sock.close()


@contextlib.contextmanager
def secret_in_cmdline() -> Iterator[tuple[str, int]]:
    """Another user's process (nobody) with a secret on its command line, as `mysql -pSECRET` would have;
    (the secret, its pid)."""
    secret = f"sh-attack-secret-{secrets.token_hex(8)}"
    process = subprocess.Popen([*as_user.argv(65534), sys.executable, "-c", "import time; time.sleep(600)", secret],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        yield secret, process.pid
    finally:
        process.kill()
        process.wait()


def _app_landlock_rules(run: AttackRun) -> dict[str, list[str]]:
    """Session A's app's Landlock paths, made as the launcher makes them (launcher/policy/confine_plan.py)."""
    allowance = app_allowance(SessionLayout(run.sid_a), python_paths(), (str(run.root / "shared"),), (), False)
    return {"read": list(allowance.read), "write": list(allowance.write), "exec": list(allowance.exec),
            "if_present": list(SYSTEM_READ)}


def _as_app_outside(run: AttackRun, mode: str, app_targets: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """as_app_outside.py as A's app uid with exactly its groups, in the host's mounts (`mode` dac or
    landlock: in the app's Landlock rules too); its lines by probe."""
    user = f"sh-{run.sid_a}-app"
    # The app's own TMPDIR is a tmpfs in its mount namespace (its host mount point is root's): a directory of
    # its uid on the host, on the door sockets' file system (a hard link must not meet EXDEV), stands in for it.
    tmp = Path(tempfile.mkdtemp(prefix="sh-test-outside-tmp-", dir="/run"))
    try:
        os.chown(tmp, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        targets = {**app_targets, "sid": run.sid_a, "launcher": run.a.proc.pid, "tmp": str(tmp),
                   "landlock": _app_landlock_rules(run)}
        done = subprocess.run([*as_user.argv(user, init_groups=True), sys.executable,
                               str(HERE / "as_app_outside.py"), mode, json.dumps(targets)],
                              capture_output=True, text=True, timeout=60, cwd="/")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert done.returncode == 0, f"{done.stderr}\nsession A's stderr: {run.a.stderr()[-3000:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"probe"')]
    return {line["probe"]: line for line in lines}


def _watch_the_persons_terminal(run: AttackRun) -> None:
    """While the app waits after changing its terminal's modes: the person's terminal's modes and screen."""
    marks = run.a.wait_probe("tty.modes_set", timeout_s=90)
    run.terminal.modes_during = run.a.terminal_modes()
    run.terminal.screen = run.a.screen_until(marks["end"].encode())
    run.a.send("go on")


def _drive(run: AttackRun, manifest_a: Path, shared: Path) -> None:
    run.sid_b = run.b.wait_probe("ready")["sid"]
    run.a_session = a = LiveSession(manifest_a, run.audit_root, run.root / "a" / "stderr", tty=True)
    run.sid_a = a.wait_probe("ready")["sid"]
    other_svid = shared / "other-session-svid.pem"
    shutil.copyfile(f"/run/sharness/{run.sid_b}/app/svid.pem", other_svid)
    other_svid.chmod(0o644)  # the premise: the attacker holds another session's stolen SVID
    run.door_pids_a = {role: _door_pid(run.sid_a, role) for role in ("fs", "keys")}
    _wait_path(run.audit_root / run.sid_a / "audit.jsonl")
    abstract = f"sh-attack-outside-{run.sid_a}"
    var_lib_socket, read_path_socket = run.root / "host-service.sock", shared / "dev-db.sock"
    with (_abstract_listener_in(f"sh-{run.sid_a}-app", abstract), _host_listener(run.host_socket),
          _host_listener(var_lib_socket), _host_listener(read_path_socket)):
        targets = {"pids": run.door_pids_a, "launcher": a.proc.pid, "other_sid": run.sid_b,
                   "other_svid": str(other_svid),
                   "abstract": abstract, "audit_root": str(run.audit_root), "workspace": str(run.workspace_a),
                   "host_socket": str(run.host_socket), "var_lib_socket": str(var_lib_socket),
                   "read_path_socket": str(read_path_socket),
                   "secret_pid": run.cmdline_secret_pid, "person_tty": a.tty_name}
        a.send(json.dumps(targets))
        run.outside_as_app = _as_app_outside(run, "dac", targets)
        run.outside_landlocked = _as_app_outside(run, "landlock", targets)
        run.b.send("fill")
        run.b.wait_probe("filled")
        _outside_on_b(run)
        run.b.send("write")
        run.b.wait_probe("wrote")
        run.summary_b = run.b.finish()
        _watch_the_persons_terminal(run)
        a.wait_probe("done", timeout_s=90)
    run.summary_a = a.finish()
    run.terminal.modes_after = a.terminal_modes()
    run.stderr_a = a.stderr()


@pytest.fixture(scope="session")
def attacks() -> Iterator[AttackRun]:
    """Both sessions, run to their end; everything they made is gone before the first test reads them."""
    if os.geteuid() != 0:
        pytest.skip("needs root on a real kernel: run `sudo make test` to watch the kernel refuse")
    root = Path(tempfile.mkdtemp(prefix="sh-test-attacks-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    host_dir = Path(tempfile.mkdtemp(prefix="sh-test-attacks-host-", dir="/tmp"))
    host_dir.chmod(0o755)
    try:
        manifest_a, manifest_b = _manifests(root)
        started = time.monotonic()
        b = LiveSession(manifest_b, root / "audit", root / "b" / "stderr")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(host_dir, ignore_errors=True)
        raise
    run = AttackRun(root, root / "ws-a", root / "ws-b", root / "audit", b=b, host_socket=host_dir / "service.sock")
    try:
        with secret_in_cmdline() as (run.cmdline_secret, run.cmdline_secret_pid):
            _drive(run, manifest_a, root / "shared")
        run.seconds = round(time.monotonic() - started, 1)
        yield run
    finally:
        for live in (run.a_session, run.b):
            if live is not None:
                live.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(host_dir, ignore_errors=True)

