"""Helpers for real-session tests: run the launcher as a subprocess, look for what a session left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LAUNCHER = [str(Path(sys.executable).parent / "sharness-launch")]
RUN_ROOT = Path("/run/sharness")
SESSIONS = RUN_ROOT / "sessions"


def write_manifest(directory: Path, document: dict[str, object]) -> Path:
    path = directory / "manifest.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def manifest_hash(path: Path) -> str:
    out = subprocess.run([*LAUNCHER, "hash", str(path)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def basic_manifest(workspace: Path, argv: list[str], **extra: object) -> dict[str, object]:
    os.chown(workspace, 65534, 65534)  # the fs door runs as the workspace owner, never root
    document: dict[str, object] = {
        "sharness": "manifest/v0",
        "session": {"name": "test", "trust_domain": "test.sharness.test", "ttl_s": 600},
        "workspace": str(workspace),
        "app": {"argv": argv, "files": {"read": [], "exec": []}, "process": {"max_memory_mb": 256, "max_pids": 64}},
        "doors": {
            "fs": {"read_only": [".git"], "refuse_secrets": True, "max_file_bytes": 1048576,
                   "max_total_bytes": 16777216, "max_files": 1000},
            "keys": {},
        },
        "edges": [["app", "fs"]],
    }
    document.update(extra)
    return document


def leftovers(sid: str | None = None) -> dict[str, list[str]]:
    """Everything named for a session (one sid, or any) that still exists on this machine."""
    prefix = f"sh-{sid}-" if sid else "sh-"
    users = [line.split(":")[0] for line in Path("/etc/passwd").read_text().splitlines()
             if line.startswith(prefix) and not line.startswith("sh-test")]
    groups = [line.split(":")[0] for line in Path("/etc/group").read_text().splitlines()
              if line.startswith(prefix) and not line.startswith("sh-test")]
    netns = [name for name in os.listdir("/run/netns")] if os.path.isdir("/run/netns") else []
    netns = [name for name in netns if name.startswith(prefix) and not name.startswith("sh-test")]
    cgroups = []
    for controller in ("memory", "pids", "unified"):
        base = Path("/sys/fs/cgroup") / controller / "sharness"
        if base.is_dir():
            cgroups += [str(p) for p in base.iterdir() if p.is_dir() and (sid is None or p.name == sid)]
    runtime = []
    if RUN_ROOT.is_dir():
        runtime += [str(p) for p in RUN_ROOT.iterdir() if p.name != "sessions" and (sid is None or p.name == sid)]
    runtime += [str(p) for p in session_dirs() if sid is None or p.name == sid]
    found = {"users": users, "groups": groups, "netns": netns, "cgroups": cgroups, "runtime": runtime}
    return {kind: names for kind, names in found.items() if names}


def session_uids(sid: str) -> set[int]:
    return {int(line.split(":")[2]) for line in Path("/etc/passwd").read_text().splitlines()
            if line.startswith(f"sh-{sid}-")}


def processes_of(sid: str) -> list[int]:
    """Pids running as one of the session's users, while those users exist."""
    return pids_with_uids(session_uids(sid))


def pids_with_uids(uids: set[int]) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("Uid:") and int(line.split()[1]) in uids:
                    pids.append(int(entry))
    return pids


def session_owner(sid_dir: Path) -> int | None:
    """The pid of the launcher that owns a session (the journal's first line)."""
    try:
        first = (sid_dir / "journal").read_text().splitlines()[0]
        return int(json.loads(first)["name"].split(":")[0])
    except (OSError, IndexError, ValueError, KeyError):
        return None


def session_dirs() -> list[Path]:
    """The sessions' journal directories now (none when the root is gone: the last one's end removes it)."""
    try:
        return [path for path in SESSIONS.iterdir() if not path.name.startswith(".")]
    except FileNotFoundError:
        return []


def wait_for_session_dir(launcher_pid: int, timeout_s: float = 20.0) -> str:
    """The sid of the session that launcher `launcher_pid` creates (other sessions may run meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in session_dirs():
            if session_owner(path) == launcher_pid:
                return path.name
        time.sleep(0.01)
    raise AssertionError("no session journal of this launcher appeared")


def new_leftovers(before: dict[str, list[str]]) -> dict[str, list[str]]:
    """What exists now that did not before: other sessions ending meanwhile do not count, nor what belongs to a
    session whose launcher is still running (another test's, or another checkout's on a shared machine)."""
    running = _running_sids()
    now = leftovers()
    fresh = {kind: [name for name in names if name not in before.get(kind, []) and not _of_any(name, running)]
             for kind, names in now.items()}
    return {kind: names for kind, names in fresh.items() if names}


def _running_sids() -> set[str]:
    """Sessions whose journal names a launcher that is alive."""
    return {path.name for path in session_dirs() if _alive(session_owner(path))}


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _of_any(name: str, sids: set[str]) -> bool:
    """Whether a leftover's name (a user, netns, cgroup or runtime path) is one of `sids`'."""
    last = name.rsplit("/", 1)[-1]
    return any(last == sid or last.startswith(f"sh-{sid}-") for sid in sids)


def in_pid_namespace(namespace: str) -> list[int]:
    """Host pids whose pid namespace is `namespace` (what /proc/<pid>/ns/pid reads, e.g. "pid:[4026532]")."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                found.append(int(entry))
        except OSError:
            continue  # gone meanwhile
    return found


def init_waits(init: int) -> bool:
    """The app's pid namespace init (launcher/lifecycle/app_init.py) is confined and idle: back in
    sigwaitinfo with no signal pending (so it handled whatever it was sent), or already exited."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{init}/status").read_text().splitlines())
    if status["State"].split()[0] == "Z":
        return True
    pending = int(status["ShdPnd"], 16) | int(status["SigPnd"], 16)
    return not pending and Path(f"/proc/{init}/wchan").read_text().startswith("do_sigtimedwait")


def until_init_waits(init: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not init_waits(init):
        assert time.monotonic() < deadline, f"the app's init {init} never went back to waiting"
        time.sleep(0.01)


def probes_and_summary(stdout: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """What a probe app printed (one `{"probe": NAME, ...}` line each) and the launcher's `--json` summary (the
    rest of stdout), from one session's output."""
    probes: dict[str, dict[str, Any]] = {}
    rest = []
    for line in stdout.splitlines():
        if line.startswith('{"probe"'):
            found = json.loads(line)
            probes[found["probe"]] = found
        else:
            rest.append(line)
    return probes, json.loads("\n".join(rest))


def let_the_app_go(sid: str, app_pids: list[int]) -> None:
    """End a probe app that waits for `$TMPDIR/sharness-go`: its TMPDIR is a tmpfs in its own mount namespace,
    reached through /proc/<pid>/root of the app (not its init's, whose root holds nothing)."""
    tmpdirs = [Path(f"/proc/{pid}/root{RUN_ROOT}/{sid}/app/tmp") for pid in app_pids]
    next(tmpdir for tmpdir in tmpdirs if tmpdir.is_dir()).joinpath("sharness-go").touch()
