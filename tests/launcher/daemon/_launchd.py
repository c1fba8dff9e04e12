"""A real sharness-launchd for a test: its own socket, policy and state under a scratch directory others may
enter; callers run `sharness-launch` as other uids (tests/as_user.py); what the daemon audited is readable."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import as_user

from launcher.daemon.deputy import Caller, Reach
from launcher.daemon.reach import CHECK_TIMEOUT_S, ReachCheck
from launcher.lifecycle.audit_keys import registry_for
from pki.vocabulary import AUDIT_ROOT

BIN = Path(sys.executable).parent
LAUNCH = str(BIN / "sharness-launch")
LAUNCHD = str(BIN / "sharness-launchd")
NOBODY, DAEMON_UID = 65534, 1  # two callers: nobody and the `daemon` account


class Scratch:
    """A root-owned 0755 directory under /tmp (pytest's own is root's 0700): what callers must reach lives here."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="sh-test-launchd-", dir="/tmp"))
        os.chmod(self.path, 0o755)

    def workspace(self, name: str, owner: int) -> Path:
        path = self.path / name
        path.mkdir(mode=0o755)
        os.chown(path, owner, owner)
        return path

    def manifest(self, name: str, workspace: Path, argv: list[str], **extra: Any) -> tuple[Path, str]:
        document: dict[str, Any] = {
            "sharness": "manifest/v0",
            "session": {"name": name, "trust_domain": "test.sharness.test", "ttl_s": 600},
            "workspace": str(workspace),
            "app": {"argv": argv, "files": {"read": [], "exec": []},
                    "process": {"max_memory_mb": 256, "max_pids": 64}},
            "doors": {"fs": {"refuse_secrets": True, "max_file_bytes": 1048576, "max_total_bytes": 16777216,
                             "max_files": 1000}},
            "edges": [["app", "fs"]],
        }
        for key, value in extra.items():
            document[key] = value
        path = self.path / f"{name}.json"
        path.write_text(json.dumps(document))
        os.chmod(path, 0o644)
        digest = subprocess.run([LAUNCH, "hash", str(path)], capture_output=True, text=True, check=True).stdout.strip()
        return path, digest

    def remove(self) -> None:
        """The scratch, and the audit log and registered key of every session a daemon of it started: the daemon
        cannot be sent an audit dir, so its sessions log where a person's do (AUDIT_ROOT)."""
        owners = self.path / "state" / "owners"
        for sid in os.listdir(owners) if owners.is_dir() else ():
            forget_session(sid)
        shutil.rmtree(self.path, ignore_errors=True)


def forget_session(sid: str) -> None:
    """Remove session `sid`'s audit directory and its key in the registry beside the audit root."""
    if not sid.isalnum():
        return
    shutil.rmtree(os.path.join(AUDIT_ROOT, sid), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(registry_for(AUDIT_ROOT), f"{sid}.pub"))


def policy_document(*principals: dict[str, Any], max_sessions: int = 8) -> dict[str, Any]:
    return {"sharness": "launchd/v0", "limits": {"max_sessions": max_sessions}, "principals": list(principals)}


class Daemon:
    """sharness-launchd as a child of the test, on a socket of its own."""

    def __init__(self, scratch: Scratch, policy: dict[str, Any], *extra: str, env: dict[str, str] | None = None,
                 argv_prefix: tuple[str, ...] = ()) -> None:
        self.scratch = scratch
        self.socket = scratch.path / "launchd.sock"
        self.state = scratch.path / "state"
        self.policy_path = scratch.path / "launchd.json"
        self.policy_path.write_text(json.dumps(policy))
        os.chmod(self.policy_path, 0o644)
        self.argv = [*argv_prefix, LAUNCHD, "--policy", str(self.policy_path), "--socket", str(self.socket),
                     "--state-dir", str(self.state), *extra]
        self.env = env
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> Daemon:
        self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, env=self.env)
        deadline = time.monotonic() + 60
        while not self.answers():  # a dead daemon's socket file may still be there: wait for a listener
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the daemon did not start: {self.process.communicate()[1]}")
            time.sleep(0.02)
        return self

    def answers(self) -> bool:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(self.socket))
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def stop(self, sig: int = signal.SIGTERM) -> str:
        """End the daemon; its stderr (the structured lines)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        _, err = self.process.communicate(timeout=180)
        return err

    def client_env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SHARNESS_LAUNCHD_SOCKET": str(self.socket)}

    def client(self, uid: int, *args: str, **popen: Any) -> subprocess.Popen[str]:
        """`sharness-launch ARGS` as `uid`, through this daemon."""
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen([*as_user.argv(uid), LAUNCH, *args], text=True, env=self.client_env(), **popen)

    def run(self, uid: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        process = self.client(uid, *args)
        out, err = process.communicate(timeout=timeout)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def audit_events(self) -> list[dict[str, Any]]:
        """Every event of every audit log this daemon's state holds (one log per daemon start)."""
        events = []
        for log in sorted((self.state / "audit").glob("*/audit.jsonl")):
            events += [json.loads(line) for line in log.read_text().splitlines() if line]
        return events

    def requests(self, verdict: str | None = None) -> list[dict[str, Any]]:
        return [event for event in self.audit_events() if event["event"] == "launchd.request"
                and (verdict is None or event["verdict"] == verdict)]

    def ps(self, uid: int) -> list[dict[str, Any]]:
        done = self.run(uid, "ps", "--json")
        assert done.returncode == 0, done.stderr
        sessions: list[dict[str, Any]] = json.loads(done.stdout)
        return sessions

    def wait_for_sid(self, uid: int, name: str, timeout_s: float = 60) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for session in self.ps(uid):
                if session["name"] == name and session["sid"] and session["state"] == "running":
                    return str(session["sid"])
            time.sleep(0.05)
        raise AssertionError(f"no running session {name!r} for uid {uid}")


def caller_reach(caller: Caller, paths: Iterable[str]) -> dict[str, Reach]:
    """path → what the caller could do with it, as the caller, waiting here for the daemon's own checker
    (launcher/daemon/reach.py, which the daemon's loop feeds instead); OSError when it fails or gives no answer
    within CHECK_TIMEOUT_S."""
    check = ReachCheck(caller, paths)
    try:
        while not check.feed():
            left = check.deadline - time.monotonic()
            if left <= 0 or not select.select([check.fd], [], [], left)[0]:
                raise OSError(f"the path checker gave no answer within {CHECK_TIMEOUT_S:g} s")
        return check.result()
    finally:
        check.close()
