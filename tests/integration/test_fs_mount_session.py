"""The workspace as a FUSE mount in a real session (app.workspace "mount"): an unmodified program's open() and
write() reach the workspace only through the fs door, every row holds, the app cannot unmount it, the host never
sees it, and a dead fs door fails the app's calls and ends the session instead of hanging them."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from launcher.kernel.fuse_mount import fuse_available
from pki.vocabulary import EXIT_FAIL_CLOSED, EXIT_SIGNAL_BASE
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)

pytestmark = [pytest.mark.root, pytest.mark.skipif(fuse_available() is not None, reason="needs /dev/fuse")]

# Runs as the app: plain open()/write()/rename()/umount through the mount, each outcome one JSON line.
APP = r"""
import ctypes, errno, json, os
ws = WORKSPACE
def probe(name, act):
    try:
        print(json.dumps({"probe": name, "ok": act()}), flush=True)
    except OSError as exc:
        print(json.dumps({"probe": name, "errno": exc.errno}), flush=True)
def write(path, data, mode="w"):
    with open(os.path.join(ws, path), mode) as out:
        out.write(data)
    return True
probe("listing", lambda: sorted(os.listdir(ws)))
probe("write", lambda: write("src/a.py", "print(1)\n") and open(os.path.join(ws, "src/a.py")).read())
probe("read_only", lambda: write(".git/HEAD", "x"))
probe("rename_over_read_only", lambda: os.rename(os.path.join(ws, "src/a.py"), os.path.join(ws, ".git/HEAD")))
probe("append", lambda: write("log", "more\n", "a"))
probe("truncate_append_only", lambda: write("log", "gone\n"))
probe("secret", lambda: write("key.pem", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n"))
probe("secret_absent", lambda: os.path.exists(os.path.join(ws, "key.pem")))
probe("too_big", lambda: write("big.bin", "x" * (3 << 20)))
def edit():  # an existing file opened for writing is staged as a copy (copy_file_range), then renamed over
    with open(os.path.join(ws, "src/a.py"), "r+") as out:
        out.seek(6)
        out.write("2)\n")
    return open(os.path.join(ws, "src/a.py")).read()
probe("edit", edit)
probe("big_append", lambda: write("log", "z" * (3 << 19), "a"))  # 1.5 MiB: spills to an unnamed file
probe("touch", lambda: os.utime(os.path.join(ws, "src/a.py"), ns=(10**18, 10**18)))
probe("tree", lambda: (os.makedirs(os.path.join(ws, "d/e")), os.rename(os.path.join(ws, "d/e"),
      os.path.join(ws, "d/f")), os.rmdir(os.path.join(ws, "d/f")), os.listdir(os.path.join(ws, "d")))[-1])
probe("escape", lambda: write("../outside.txt", "x"))
libc = ctypes.CDLL(None, use_errno=True)
def umount():
    if libc.umount2(ws.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "umount2")
probe("umount", umount)
probe("mount_type", lambda: [line.split(" - ")[1].split()[0] for line in open("/proc/self/mountinfo")
                             if line.split()[4] == ws])
"""


def _run(tmp_path: Path, app: str, rows: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], Path]:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "src").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: main\n")
    (workspace / "log").write_text("start\n")
    subprocess.run(["chown", "-R", "65534:65534", str(workspace)], check=True)
    document = basic_manifest(workspace, [sys.executable, "-c", app.replace("WORKSPACE", repr(str(workspace)))])
    document["app"]["workspace"] = "mount"  # type: ignore[index]
    document["doors"]["fs"].update(rows)  # type: ignore[index]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
         str(tmp_path / "audit"), "--json"],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )
    return done, workspace


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    logs = list((tmp_path / "audit").glob("*/audit.jsonl"))
    assert len(logs) == 1
    return [json.loads(line) for line in logs[0].read_text().splitlines()]


def test_the_app_writes_through_the_mount_and_every_row_holds(tmp_path: Path) -> None:
    rows = {"read_only": [".git"], "append_only": ["log"], "max_file_bytes": 2 << 20}
    done, workspace = _run(tmp_path, APP, rows)
    assert done.returncode == 0, done.stderr
    probes, summary = probes_and_summary(done.stdout)
    assert probes["listing"]["ok"] == [".git", "log", "src"]
    assert probes["write"]["ok"] == "print(1)\n"
    landed = (workspace / "src" / "a.py").stat()
    assert (landed.st_uid, landed.st_mode & 0o7777) == (65534, 0o644)  # the workspace owner's, as the door writes
    assert probes["read_only"]["errno"] == errno.EACCES
    assert probes["rename_over_read_only"]["errno"] == errno.EACCES
    assert (workspace / ".git" / "HEAD").read_text() == "ref: main\n"
    assert probes["append"]["ok"] is True
    assert probes["truncate_append_only"]["errno"] == errno.EPERM
    assert (workspace / "log").read_text().startswith("start\nmore\nz")
    assert probes["secret"]["errno"] == errno.EACCES  # close() returned it
    assert probes["secret_absent"]["ok"] is False and not (workspace / "key.pem").exists()
    # The write past max_file_bytes is refused; the file holds what was written before the limit, as with a rlimit.
    assert probes["too_big"]["errno"] == errno.EFBIG and (workspace / "big.bin").stat().st_size <= 2 << 20
    assert probes["edit"]["ok"] == "print(2)\n"
    assert probes["big_append"]["ok"] is True
    assert (workspace / "log").stat().st_size == len("start\nmore\n") + (3 << 19)
    assert "errno" not in probes["touch"] and (workspace / "src" / "a.py").stat().st_mtime_ns == 10**18
    assert probes["tree"]["ok"] == []
    assert probes["escape"]["errno"] in (errno.EACCES, errno.EROFS, errno.ENOENT)  # the app's own root holds it
    assert not (tmp_path / "outside.txt").exists()
    assert probes["umount"]["errno"] == errno.EPERM
    assert probes["mount_type"]["ok"] == ["fuse.sharness"]
    events = [line for line in _audit(tmp_path) if line.get("event") == "door.event" and line.get("via") == "mount"]
    refused = {(line["op"], line["path"], line["row"]) for line in events if line["decision"] == "refuse"}
    assert ("write", "key.pem", "refuse_secrets") in refused
    assert ("write", ".git/HEAD", "read_only") in refused
    written = [line for line in events if line["op"] == "write" and line["path"] == "src/a.py" and "opened" in line]
    assert [(line["decision"], line["opened"], line["closed"]) for line in written] == [
        ("allow", "create", "flush"), ("allow", "write", "flush")]  # one event per file write: made, then edited
    assert any(line.get("change") == "times" and line["path"] == "src/a.py" for line in events)
    sid = summary["sid"]
    assert leftovers(sid) == {key: [] for key in leftovers(sid)}
    assert "fuse.sharness" not in Path("/proc/self/mountinfo").read_text()


# The app writes part of a file, then has the fs door killed (it may signal nothing outside its namespace: the
# test does it from outside, through the marker file's appearance), then tries to finish the write.
KILLED = r"""
import json, os, time
ws = WORKSPACE
out = open(os.path.join(ws, "half.bin"), "w")
out.write("x" * 1000)
out.flush()
print(json.dumps({"probe": "started"}), flush=True)
time.sleep(600)
"""


def _started(tmp_path: Path, app: str) -> tuple[subprocess.Popen[str], Path]:
    """A session whose app mounts an empty workspace, running `app`, once it printed {"probe": "started"}."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    subprocess.run(["chown", "-R", "65534:65534", str(workspace)], check=True)
    document = basic_manifest(workspace, [sys.executable, "-c", app.replace("WORKSPACE", repr(str(workspace)))])
    document["app"]["workspace"] = "mount"  # type: ignore[index]
    manifest = write_manifest(tmp_path, document)
    launcher = subprocess.Popen(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
         str(tmp_path / "audit"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )
    assert launcher.stdout is not None
    line = launcher.stdout.readline()
    assert json.loads(line) == {"probe": "started"}, line
    return launcher, workspace


def test_a_killed_fs_door_fails_the_app_and_ends_the_session(tmp_path: Path) -> None:
    launcher, workspace = _started(tmp_path, KILLED)
    # While the app writes through it, the host has no such mount: only the app's namespace holds it.
    assert str(workspace) not in Path("/proc/self/mountinfo").read_text()
    door = _fs_door_pid(launcher.pid)
    subprocess.run(["kill", "-KILL", str(door)], check=True)
    _out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == EXIT_FAIL_CLOSED, err
    assert "fs" in err and not (workspace / "half.bin").exists()


# The app stats a file of the mount again and again; the test makes the fs door lose one answer.
STUCK = r"""
import json, os, time
ws = WORKSPACE
open(os.path.join(ws, "notes.md"), "w").close()
print(json.dumps({"probe": "started"}), flush=True)
while True:
    os.stat(os.path.join(ws, "notes.md"))
    time.sleep(0.01)
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (make system-tools installs it)")
def test_an_app_held_by_a_request_its_door_never_answers_still_ends_with_the_session(tmp_path: Path) -> None:
    """Once the fs door has read a request, the kernel lets no signal end the app's wait for its answer (FUSE's
    request_wait_answer), so the app outlives its SIGKILL. The launcher then stops the fs door: its device closes,
    the connection aborts, the app dies and the session ends, rather than waiting on the app for ever."""
    launcher, _workspace = _started(tmp_path, STUCK)
    door = _fs_door_pid(launcher.pid)
    trace = tmp_path / "strace.txt"
    # The door's next reply fails with EINTR (injected): the request it answered is read and never answered.
    tracer = subprocess.Popen(["strace", "-p", str(door), "-e", "trace=writev", "-e",
                               "inject=writev:error=EINTR:when=1", "-o", str(trace)], stderr=subprocess.DEVNULL)
    try:
        while "INJECTED" not in (trace.read_text() if trace.exists() else ""):
            assert tracer.poll() is None, "strace ended before it held a reply back"
            time.sleep(0.05)
    finally:
        tracer.terminate()  # detaches: the door goes on serving every other request
        tracer.wait(timeout=30)
    launcher.send_signal(signal.SIGTERM)
    try:
        _out, err = launcher.communicate(timeout=120)  # a liveness guard, not a timing figure
    except subprocess.TimeoutExpired:
        os.kill(door, signal.SIGKILL)  # what the launcher should have done: frees the app, then the session
        launcher.communicate(timeout=60)
        raise AssertionError("the session did not end: the launcher waited on an app no signal could end") from None
    assert launcher.returncode == EXIT_SIGNAL_BASE + signal.SIGTERM, err
    events = _audit(tmp_path)
    stuck = [event for event in events if event["event"] == "process.stuck"]
    assert [(event["role"], event["stopping"]) for event in stuck] == [("app", "fs")]
    ends = {event["role"]: event["wait_status"] for event in events if event["event"] == "process.end"}
    assert os.WIFSIGNALED(ends["app"]) and os.WTERMSIG(ends["app"]) == signal.SIGKILL
    sid = next(event["sid"] for event in events if event["event"] == "session.start")
    assert leftovers(sid) == {key: [] for key in leftovers(sid)}


def _fs_door_pid(launcher_pid: int) -> int:
    """The launcher's child running as the workspace owner (65534): the fs door."""
    children = Path(f"/proc/{launcher_pid}/task/{launcher_pid}/children").read_text().split()
    for child in children:
        status = Path(f"/proc/{child}/status").read_text()
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        if uid_line.split()[1] == "65534":
            return int(child)
    raise AssertionError(f"no fs door among {children}")


def test_without_fuse_the_mount_is_refused_before_anything_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A machine without /dev/fuse (or pyfuse3): run refuses with 78, naming the row and why, and makes nothing."""
    import dataclasses

    from launcher import cli
    from launcher.kernel import probe
    from pki.vocabulary import EXIT_UNHELD

    real = probe.probe_kernel
    monkeypatch.setattr(probe, "probe_kernel", lambda: dataclasses.replace(
        real(), fuse_missing="/dev/fuse is missing (No such file or directory): load the fuse module"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, "-c", "pass"])
    document["app"]["workspace"] = "mount"  # type: ignore[index]
    manifest = write_manifest(tmp_path, document)
    assert cli.main(["run", str(manifest), "--expect-hash", manifest_hash(manifest)]) == EXIT_UNHELD
    err = capsys.readouterr().err  # the gate runs before the journal: other sessions here make leftovers unsafe to diff
    assert "app: workspace.mount" in err and "/dev/fuse is missing" in err and "nothing was created" in err
