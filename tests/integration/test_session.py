"""Real sessions, as root: refusals create nothing, exit codes propagate, doors fail closed, nothing stays."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import as_user
from tests.integration._session import (
    LAUNCHER,
    RUN_ROOT,
    basic_manifest,
    leftovers,
    manifest_hash,
    new_leftovers,
    pids_with_uids,
    processes_of,
    session_uids,
    wait_for_session_dir,
    write_manifest,
)

pytestmark = pytest.mark.root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    os.chmod(tmp_path, 0o755)
    return ws


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    path = tmp_path / "audit"
    path.mkdir()
    return path


def _run(manifest: Path, *extra: str, audit_dir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LAUNCHER, "run", str(manifest), "--audit-dir", str(audit_dir), "--best-effort", *extra],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def test_app_exit_code_is_the_launchers_and_nothing_stays(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/sh", "-c", "exit 7"]))
    before = leftovers()
    done = _run(manifest, "--expect-hash", manifest_hash(manifest), "--json", audit_dir=audit_dir)
    assert done.returncode == 7, done.stderr
    summary = json.loads(done.stdout)
    assert summary["exit_code"] == 7
    assert summary["teardown_errors"] == []
    assert leftovers(summary["sid"]) == {}
    assert new_leftovers(before) == {}


def test_audit_log_of_a_session_verifies_intact(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/true"]))
    done = _run(manifest, "--expect-hash", manifest_hash(manifest), "--json", audit_dir=audit_dir)
    assert done.returncode == 0, done.stderr
    session_dir = json.loads(done.stdout)["audit_dir"]
    verify = subprocess.run([*LAUNCHER, "verify-audit", session_dir], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "intact" in verify.stdout
    lines = Path(session_dir, "audit.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in lines]
    assert "door.ready" in events and "session.end" in events


def test_hash_mismatch_exits_125_and_creates_nothing(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/true"]))
    before = leftovers()
    done = _run(manifest, "--expect-hash", "sha256:" + "0" * 64, audit_dir=audit_dir)
    assert done.returncode == 125
    assert "hash mismatch" in done.stderr
    assert new_leftovers(before) == {}
    assert list(audit_dir.iterdir()) == []


def test_no_hash_without_a_terminal_is_refused(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/true"]))
    done = _run(manifest, audit_dir=audit_dir)
    assert done.returncode == 125
    assert "--expect-hash" in done.stderr


def test_invalid_manifest_exits_65(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, []))
    done = _run(manifest, "--expect-hash", "sha256:" + "0" * 64, audit_dir=audit_dir)
    assert done.returncode == 65
    assert "/app/argv" in done.stderr


def test_not_root_exits_77(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/true"]))
    os.chmod(manifest, 0o644)
    done = subprocess.run(
        [*as_user.argv(65534), *LAUNCHER, "run", str(manifest)],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 77, done.stderr
    assert "root" in done.stderr


def test_a_refused_path_leaves_not_even_the_runtime_root(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    """The start-up sweep makes /run/sharness/sessions to lock it; a run refused after it (a missing read path:
    78) leaves neither that nor /run/sharness, when no other session had them."""
    if RUN_ROOT.exists():
        pytest.skip(f"{RUN_ROOT} exists already (another session runs): its removal is not this run's to show")
    document = basic_manifest(workspace, ["/bin/true"])
    document["app"]["files"]["read"] = [str(tmp_path / "missing")]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(audit_dir)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 78 and "nothing was created" in done.stderr, done.stderr
    assert not RUN_ROOT.exists()


# Every row this version names is held now; a launcher built without the shell door's holder (its rows taken out
# of IMPLEMENTED_ROWS in that process only) is what a row without a holder looks like.
_WITHOUT_SHELL_HOLDER = (
    "import sys; import launcher.policy.plan as plan; "
    "plan.IMPLEMENTED_ROWS = frozenset(r for r in plan.IMPLEMENTED_ROWS if not r.startswith(('shell.', 'shell:'))); "
    "from launcher.cli import main; sys.argv[0] = 'sharness-launch'; sys.exit(main())"
)


def test_unheld_rows_exit_78_naming_them_and_create_nothing(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    document = basic_manifest(workspace, ["/bin/true"])
    document["doors"] = {"shell": {"workspace": "none"},
                         "model": {"upstream": "twin", "budget_microusd": 1000}}
    document["edges"] = [["app", "shell"], ["app", "model"]]
    manifest = write_manifest(tmp_path, document)
    before = leftovers()
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_SHELL_HOLDER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
         "--audit-dir", str(audit_dir)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 78, done.stderr
    assert "shell.workspace (not in this version)" in done.stderr and "shell.egress" in done.stderr
    assert "model.upstream" not in done.stderr
    assert "--best-effort" in done.stderr
    assert new_leftovers(before) == {}
    assert list(audit_dir.iterdir()) == []


def test_a_door_that_dies_ends_the_session(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/sleep", "60"]))
    launcher = subprocess.Popen(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir", str(audit_dir),
         "--json", "--best-effort"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )
    try:
        sid = wait_for_session_dir(launcher.pid)
        deadline = time.monotonic() + 20
        fs_pid = None
        while time.monotonic() < deadline and fs_pid is None:
            fs_pid = _child_running_as(launcher.pid, 65534)  # the fs door runs as the workspace owner
            time.sleep(0.05)
        assert fs_pid is not None, "the fs door never appeared"
        time.sleep(0.5)  # let the app start too
        os.kill(fs_pid, signal.SIGKILL)
        _, err = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 70, err
    assert "door fs" in err and "fail closed" in err
    assert leftovers(sid) == {}


def test_sigterm_ends_the_session_in_order(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/sleep", "60"]))
    launcher = subprocess.Popen(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir", str(audit_dir),
         "--best-effort"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )
    try:
        sid = wait_for_session_dir(launcher.pid)
        _wait_for_app(sid)
        uids = session_uids(sid)
        launcher.send_signal(signal.SIGTERM)
        _, err = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM" in err
    assert leftovers(sid) == {}
    assert pids_with_uids(uids) == []


def _child_running_as(parent: int, uid: int) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["PPid"]) == parent and int(fields["Uid"].split()[0]) == uid:
            return int(entry)
    return None


def _uid(user: str) -> int:
    for line in Path("/etc/passwd").read_text().splitlines():
        if line.startswith(user + ":"):
            return int(line.split(":")[2])
    return -1


def _wait_for_app(sid: str, timeout_s: float = 20) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        uid = _uid(f"sh-{sid}-app")
        for pid in processes_of(sid):
            if f"\t{uid}\t" in Path(f"/proc/{pid}/status").read_text():
                return pid
        time.sleep(0.05)
    raise AssertionError("the app never started")


@pytest.mark.parametrize("typed_right", [True, False])
def test_on_a_terminal_the_person_types_the_whole_hash(tmp_path: Path, workspace: Path, audit_dir: Path,
                                                       typed_right: bool) -> None:
    import pty

    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/true"]))
    digest = manifest_hash(manifest).removeprefix("sha256:")
    typed = digest if typed_right else digest[:-1] + ("1" if digest.endswith("0") else "0")
    main_fd, child_fd = pty.openpty()
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest), "--audit-dir", str(audit_dir)],
                                stdin=child_fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(child_fd)
    try:
        os.write(main_fd, (typed + "\n").encode())
        _, err = launcher.communicate(timeout=60)
    finally:
        os.close(main_fd)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert "sha256: " + " ".join(digest[at:at + 4] for at in range(0, 64, 4)) in err  # the fingerprint, grouped
    if typed_right:
        assert launcher.returncode == 0, err
    else:
        assert launcher.returncode == 125 and "are not the manifest hash" in err
        assert list(audit_dir.iterdir()) == []


def test_a_world_writable_socket_in_the_apps_read_paths_refuses_the_session(tmp_path: Path, workspace: Path,
                                                                             audit_dir: Path) -> None:
    import socket

    shared = tmp_path / "shared"
    shared.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(shared / "dev-db.sock"))
    (shared / "dev-db.sock").chmod(0o777)
    document = basic_manifest(workspace, ["/bin/true"])
    document["app"]["files"]["read"] = [str(shared)]  # type: ignore[index]
    manifest = write_manifest(tmp_path, document)
    before = leftovers()
    try:
        done = _run(manifest, "--expect-hash", manifest_hash(manifest), audit_dir=audit_dir)
    finally:
        listener.close()
    assert done.returncode == 78, done.stderr
    assert str(shared / "dev-db.sock") in done.stderr and "app.files.read" in done.stderr
    assert "nothing was created" in done.stderr
    assert new_leftovers(before) == {}
