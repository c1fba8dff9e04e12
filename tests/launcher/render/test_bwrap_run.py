"""The bwrap render run for real: the matrix is measured, not asserted.

As root the test renders a manifest with `render --to bwrap`, then runs the rendered script as nobody (where the
launcher cannot run) with the hello probe app (doors/hello_probe.py) as the app, and with bwrap_checks.py for the
rows the probe does not try. Every row the matrix calls held must be seen held, every row it calls unheld seen
not held; the app's rows and the TTL are each measured by at least one probe or check.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import as_user
import pytest

from launcher.commands.render import host_input, write_files
from launcher.manifest import Manifest, load_manifest
from launcher.render import render
from launcher.render.rendering import Rendering
from launcher.render.seccomp_profile import filter_mode
from pki.vocabulary import EXIT_SIGNAL_BASE

pytestmark = [pytest.mark.root, pytest.mark.skipif(shutil.which("bwrap") is None,
                                                   reason="bubblewrap is not installed (make system-tools)")]
NOBODY = 65534
PROBE = Path(__file__).resolve().parents[3] / "doors" / "hello_probe.py"
CHECKS = Path(__file__).resolve().parent / "bwrap_checks.py"
# Which row each hello probe measures under bwrap; None: no row (the caller is not root, whatever the render).
PROBE_ROWS: dict[str, str | None] = {
    "workspace.write": "root", "etc.write": "root", "other_dir.write": "root", "launcher_state.read": "root",
    "door.off_edge": "root", "key.read": "pidns", "environ.read": "pidns", "door.signal": "landlock.scope",
    "door.ptrace": "seccomp", "socket.inet": "seccomp", "socket.udp": "seccomp", "socket.packet": "seccomp",
    "io_uring": "seccomp", "userns": "seccomp", "egress.public": "netns", "memory.limit": "memory",
    "pids.limit": "pids", "setuid.root": None,
}


@pytest.fixture
def outside() -> Iterator[dict[str, Any]]:
    """What the probe aims at, outside the sandbox: a workspace, a door's directory, a journal, a socket, a
    process of another session (started as nobody too: the same uid, only namespaces between them). In a
    directory nobody may enter (pytest's own tmp_path is root's alone)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="sh-test-bwrap-"))
    tmp_path.chmod(0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir(mode=0o777)
    workspace.chmod(0o777)
    (workspace / "svid.pem").write_text("-----BEGIN PRIVATE KEY-----\nnot a key, the probe's marker\n")
    runtime = tmp_path / "run"
    (runtime / "keys").mkdir(parents=True)
    (runtime / "journal").write_text("")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(runtime / "keys.sock"))
    listener.listen()
    victim = subprocess.Popen([*as_user.argv(NOBODY), "sleep", "600"])
    try:
        yield {"tmp": tmp_path, "workspace": str(workspace), "runtime": str(runtime), "victim": victim.pid,
               "socket": str(runtime / "keys.sock")}
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        listener.close()
        shutil.rmtree(tmp_path)


def _manifest(workspace: str, argv: list[str], net: bool, ttl_s: int = 120, cwd: str | None = None) -> Manifest:
    doors: dict[str, Any] = {"fs": {"refuse_secrets": True, "max_file_bytes": 4096, "max_total_bytes": 65536,
                                    "max_files": 16}}
    if net:
        doors["net"] = {"allow": {"app": ["pypi.org:443"]}}
    document = {
        "sharness": "manifest/v0", "session": {"name": "bwrap", "trust_domain": "bwrap.sharness.test", "ttl_s": ttl_s},
        "workspace": workspace,
        "app": {"argv": argv, "files": {"read": [workspace], "exec": []},
                "process": {"max_memory_mb": 64, "max_pids": 32}},
        "doors": doors,
    }
    if cwd is not None:
        document["app"]["cwd"] = cwd
    return load_manifest(json.dumps(document).encode())


def _run(manifest: Manifest, out: Path) -> tuple[Rendering, subprocess.CompletedProcess[str]]:
    rendering = render(manifest, "bwrap", host_input(None, False))
    write_files(rendering, str(out))
    for path in out.iterdir():
        path.chmod(0o644)
    out.chmod(0o755)
    done = subprocess.run([*as_user.argv(NOBODY), "sh", str(out / "bwrap.sh")], capture_output=True, text=True,
                          timeout=120, cwd="/")
    return rendering, done


def _probe_argv(outside: dict[str, Any], deny_inet: bool) -> list[str]:
    targets = {"victim_door": "keys", "pids": {"keys": outside["victim"]}, "workspace": outside["workspace"],
               "runtime_dir": outside["runtime"], "journal": f"{outside['runtime']}/journal",
               "off_edge_door": "keys", "sockets": {"keys": outside["socket"]}, "deny_inet": deny_inet,
               "max_memory_mb": 64, "max_pids": 32, "hello_door": None}
    return ["/usr/bin/env", f"SHARNESS_PROBE={json.dumps(targets)}", f"SHARNESS_SVID={outside['workspace']}/svid.pem",
            sys.executable, "-I", str(PROBE)]


def _lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _held(rendering: Rendering) -> dict[str, bool]:
    return {line.row_id: line.held for line in rendering.matrix if line.component in ("app", "session")}


@pytest.mark.parametrize("net", [True, False], ids=["net-edge", "no-net-edge"])
def test_every_app_row_is_held_exactly_as_the_matrix_says(outside: dict[str, Any], net: bool) -> None:
    workspace = outside["workspace"]
    deny_inet = filter_mode(_manifest(workspace, ["/bin/true"], net), "app", ()).deny_inet
    assert deny_inet is not net
    rendering, done = _run(_manifest(workspace, _probe_argv(outside, deny_inet), net), outside["tmp"] / "probe")
    held = _held(rendering)
    measured: dict[str, list[bool]] = {}
    for probe in _lines(done):
        name = str(probe["probe"])
        if name.startswith("control."):
            assert probe["held"], probe  # the app may do what it is allowed: a broken setup is no pass
            continue
        row = PROBE_ROWS[name]
        if row is None:
            assert probe["held"], probe
            continue
        assert probe["held"] == held[row], f"matrix says {row} {'held' if held[row] else 'unheld'}: {probe}"
        measured.setdefault(row, []).append(probe["held"])
    scratch_mb, scratch_inodes = _manifest(workspace, ["/bin/true"], net).scratch_limits("app")
    facts = {"ipc_ns": os.stat("/proc/self/ns/ipc").st_ino, "caller_uid": NOBODY, "deny_inet": deny_inet,
             "scratch_mb": scratch_mb, "scratch_inodes": scratch_inodes}
    checked = _run(_manifest(workspace, [sys.executable, "-I", str(CHECKS), json.dumps(facts)], net),
                   outside["tmp"] / "checks")[1]
    for check in _lines(checked):
        row = str(check["row"])
        if row not in held:  # proxy_env without the edge app→net: no row, and no variable either
            assert not check["held"], check
            continue
        assert check["held"] == held[row], f"matrix says {row} {'held' if held[row] else 'unheld'}: {check}"
        measured.setdefault(row, []).append(check["held"])
    # The TTL has its own test below; session.audit is unheld for want of any audit log: nothing to measure.
    unmeasured = set(held) - set(measured) - {"session.ttl", "session.audit"}
    assert unmeasured == set()


def test_the_ttl_kills_the_app(outside: dict[str, Any]) -> None:
    """The rendered timeout(1) kills the sandboxed app at the TTL. The manifest's least TTL is 60 s: the test
    runs the rendered script with that number lowered to 1, the mechanism unchanged."""
    ttl_s = 60
    manifest = _manifest(outside["workspace"], ["/bin/sleep", "601"], net=False, ttl_s=ttl_s)
    rendering = render(manifest, "bwrap", host_input(None, False))
    assert _held(rendering)["session.ttl"]
    out = outside["tmp"] / "ttl"
    write_files(rendering, str(out))
    script = (out / "bwrap.sh").read_text()
    assert f"exec timeout --signal=KILL {ttl_s} bwrap " in script
    (out / "bwrap.sh").write_text(script.replace(f"--signal=KILL {ttl_s} ", "--signal=KILL 1 "))
    out.chmod(0o755)
    for path in out.iterdir():
        path.chmod(0o644)
    done = subprocess.run([*as_user.argv(NOBODY), "sh", str(out / "bwrap.sh")], capture_output=True, text=True,
                          timeout=120, cwd="/")
    # timeout(1) passes the child's end on by dying of the same signal.
    assert done.returncode in (-signal.SIGKILL, EXIT_SIGNAL_BASE + signal.SIGKILL), done.stderr
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == ["/bin/sleep", "601"]]


def _cmdline(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def test_the_doors_rows_are_unheld_and_nothing_of_a_door_is_there(outside: dict[str, Any]) -> None:
    rendering = render(_manifest(outside["workspace"], ["/bin/true"], net=True), "bwrap", host_input(None, False))
    doors = [line for line in rendering.matrix if line.component not in ("app", "session")]
    assert doors and not any(line.held for line in doors)


@pytest.mark.parametrize("cwd", ["workspace", None], ids=["cwd-workspace", "cwd-default"])
def test_the_app_starts_where_app_cwd_says(outside: dict[str, Any], cwd: str | None) -> None:
    workspace = outside["workspace"]
    manifest = _manifest(workspace, ["/bin/pwd"], net=False, cwd=cwd)
    _, done = _run(manifest, outside["tmp"] / "cwd")
    assert done.returncode == 0, done.stderr
    started = done.stdout.strip()
    if cwd == "workspace":
        assert started == workspace
    else:
        assert started != workspace and started.endswith("/app")
