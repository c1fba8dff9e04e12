"""The net door in real sessions, as root: every way out either fails in the kernel or is the door's to refuse.

Traffic stays on this machine: direct connections target 192.0.2.1 from a namespace holding only loopback
(no route, or refused by Landlock before routing), and every request through the door names a host it
refuses before resolving, a loopback/private/documentation address it refuses before dialling, or
`localhost` (resolved from /etc/hosts). The app is tests/integration/net_probe.py, which only reports what
it saw; the assertions on where each refusal came from are here.
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from launcher.kernel import netns
from tests.integration._session import (
    LAUNCHER,
    RUN_ROOT,
    basic_manifest,
    leftovers,
    let_the_app_go,
    manifest_hash,
    write_manifest,
)

pytestmark = pytest.mark.root

PROBE = str(Path(__file__).with_name("net_probe.py"))
EVENT_FIELDS = {"event", "seq", "ts", "prev", "t_ms", "door", "kind", "role", "client_role", "method", "requested",
                "host", "port", "answers", "address", "proxy", "sni", "decision", "reason", "row", "status", "bytes_up",
                "bytes_down", "duration_ms"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    path = tmp_path / "audit"
    path.mkdir()
    return path


def _manifest(tmp_path: Path, workspace: Path, probe_args: list[str], net: dict[str, Any],
              edges: list[list[str]], shell: bool = False) -> Path:
    """A session of the app, the net door and (with `shell`) a shell door: no fs, no keys."""
    document = basic_manifest(workspace, [sys.executable, PROBE, *probe_args])
    document["doors"] = {"net": net, **({"shell": {"workspace": "none"}} if shell else {})}
    document["edges"] = edges
    return write_manifest(tmp_path, document)


def _command(manifest: Path, audit_dir: Path) -> list[str]:
    return [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
            str(audit_dir), "--json", "--best-effort"]


def _split(stdout: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The probe's JSON lines by probe name, and the launcher's --json summary (the rest of stdout)."""
    probes: dict[str, dict[str, Any]] = {}
    rest = []
    for line in stdout.splitlines():
        if line.startswith('{"probe"'):
            found = json.loads(line)
            probes[found["probe"]] = found
        else:
            rest.append(line)
    return probes, json.loads("\n".join(rest))


def _run(manifest: Path, audit_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    done = subprocess.run(_command(manifest, audit_dir), capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    probes, summary = _split(done.stdout)
    assert summary["teardown_errors"] == []
    assert leftovers(summary["sid"]) == {}
    return probes, summary


def _audit(summary: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    text = Path(summary["audit_dir"], "audit.jsonl").read_text()
    return text, [json.loads(line) for line in text.splitlines()]


def _net_requests(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == "door.event" and event.get("kind") == "net.request"]


def test_direct_egress_fails_in_the_kernel_not_at_the_door(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    """With app→net and 192.0.2.1:443 even on the allowlist, bypassing the proxy fails before any packet.

    Landlock's signature is the errno by port: 443 is EACCES (Landlock refuses connect() before routing),
    while 3128, the one port Landlock allows, gets ENETUNREACH from a namespace that holds only loopback.
    The door audits nothing: it never saw these attempts.
    """
    net = {"allow": {"app": ["192.0.2.1:443"]}, "allow_ip_literals": ["app"]}
    manifest = _manifest(tmp_path, workspace, ["kernel"], net, [["app", "net"]])
    probes, summary = _run(manifest, audit_dir)

    assert probes["env"]["proxy"] == dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), "http://127.0.0.1:3128")
    assert probes["control.proxy"] == {"probe": "control.proxy", "step": "connect", "errno": None}
    hello = probes["net.hello"]  # control: with the edge, the door's mTLS socket answers the app
    assert hello.get("role") == "net" and hello["spiffe_id"].endswith(f"/session/{summary['sid']}/net"), hello
    curl_443, curl_3128 = probes["curl.noproxy.443"], probes["curl.noproxy.3128"]
    assert curl_443["exit"] == 7 and any("192.0.2.1: Permission denied" in line for line in curl_443["trace"]), curl_443
    assert curl_3128["exit"] == 7 and any("Network is unreachable" in line for line in curl_3128["trace"]), curl_3128
    assert probes["tcp4.public.443"] == {"probe": "tcp4.public.443", "step": "connect", "errno": "EACCES"}
    assert probes["tcp4.public.3128"] == {"probe": "tcp4.public.3128", "step": "connect", "errno": "ENETUNREACH"}
    assert probes["tcp6.public.3128"] == {"probe": "tcp6.public.3128", "step": "connect", "errno": "ENETUNREACH"}
    for udp in ("udp4", "udp6"):  # seccomp: the app has no datagram socket of any inet family
        assert probes[udp] == {"probe": udp, "step": "socket", "errno": "EPERM"}
    assert probes["setns"]["errno"] == "EPERM"  # seccomp; unfiltered, setns(-1) is EBADF
    _, events = _audit(summary)
    assert _net_requests(events) == []


REFUSALS = {  # requested → (status, X-Sharness-Refusal, how many requests)
    "not-allowed.example:443": (403, "not-allowlisted; row=doors.net.allow", 2),  # the CONNECT probe and curl
    "shell-only.example:443": (403, "not-allowlisted; row=doors.net.allow", 1),
    "localhost:443": (403, "loopback; row=doors.net.public_addresses", 1),
    "10.0.0.1:443": (403, "private; row=doors.net.public_addresses", 1),
    "192.0.2.1:443": (403, "documentation; row=doors.net.public_addresses", 1),
    "http://not-allowed.example": (403, "not-allowlisted; row=doors.net.allow", 1),
}


def test_proxy_refusals_name_reason_and_row_and_each_is_audited(
    tmp_path: Path, workspace: Path, audit_dir: Path
) -> None:
    """Through the app's proxy listener: the door refuses, says why and which row, and audits each request once.

    The shell's allowlist does not apply on the app's listener; 192.0.2.1:443, allowlisted, is still refused
    (documentation range): no manifest row makes any destination on this machine reachable.
    """
    net = {"allow": {"app": ["localhost:443", "localhost:80", "10.0.0.1:443", "192.0.2.1:443"],
                     "shell": ["shell-only.example:443"]},
           "allow_ip_literals": ["app"]}
    targets = ["connect=not-allowed.example:443", "connect=shell-only.example:443", "connect=localhost:443",
               "connect=10.0.0.1:443", "connect=192.0.2.1:443", "get=not-allowed.example", "smuggle=localhost"]
    edges = [["app", "net"], ["shell", "net"]]
    manifest = _manifest(tmp_path, workspace, ["proxy", *targets], net, edges, shell=True)
    probes, summary = _run(manifest, audit_dir)

    for target in targets[:-1]:
        kind, _, authority = target.partition("=")
        found = probes[f"proxy.{kind}.{authority}"]
        requested = authority if kind == "connect" else f"http://{authority}"
        status, refusal, _ = REFUSALS[requested]
        assert (found["status"], found["refusal"]) == (status, refusal), found
        assert found["body"]["who"] == "net" and found["body"]["reason"] == refusal.split(";")[0], found
        assert found["body"]["error"] == refusal.split("row=")[1]
    assert "role 'app'" in probes["proxy.connect.shell-only.example:443"]["body"]["detail"]
    smuggled = probes["proxy.smuggle.localhost"]
    assert (smuggled["status"], smuggled["refusal"]) == (400, "cl-and-te; row=doors.net.framing"), smuggled
    assert probes["curl.via_proxy"]["exit"] == 56 and "response 403" in probes["curl.via_proxy"]["error"]

    text, events = _audit(summary)
    requests = _net_requests(events)
    assert len(requests) == sum(count for *_, count in REFUSALS.values()) + 1  # + the framing attack
    assert Counter(event["requested"] for event in requests if event["requested"]) == {
        requested: count for requested, (*_, count) in REFUSALS.items()}
    for event in requests:
        assert event["role"] == "net" and event["door"] == "net" and event["client_role"] == "app", event
        assert event["decision"] == "refuse" and event["address"] == "" and event["bytes_up"] == 0, event
        assert set(event) <= EVENT_FIELDS, set(event) - EVENT_FIELDS
        if event["requested"]:
            status, refusal, _ = REFUSALS[event["requested"]]
            assert (event["status"], event["reason"], event["row"]) == (status, *refusal.split("; row=")), event
        else:
            assert (event["status"], event["reason"], event["row"]) == (400, "cl-and-te", "doors.net.framing")
    for secret in ("hunter2", "t0ken", "/secret", "Bearer"):  # no header value, no path or query
        assert secret not in text
    verify = subprocess.run([*LAUNCHER, "verify-audit", summary["audit_dir"]], capture_output=True, text=True)
    assert verify.returncode == 0 and "intact" in verify.stdout, verify.stdout + verify.stderr


def _connect_in(netns_name: str) -> int:
    """connect() to 127.0.0.1:3128 from inside `netns_name` (as root, from the test); 0 or the errno."""
    with netns.entered(netns_name), socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        return sock.connect_ex(("127.0.0.1", 3128))


def _connect_as(user: str, path: str) -> int:
    """connect() to a Unix socket as `user` with exactly that user's groups, from the host's mounts; errno."""
    code = f"import socket; s = socket.socket(socket.AF_UNIX); print(s.connect_ex({path!r}))"
    done = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", sys.executable,
                           "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def _read_probes_until(launcher: subprocess.Popen[str], last: str, timeout_s: float = 60) -> dict[str, dict[str, Any]]:
    assert launcher.stdout is not None
    # Raw reads of the pipe: select() cannot see lines already sitting in a TextIOWrapper's buffer.
    fd = launcher.stdout.fileno()
    probes: dict[str, dict[str, Any]] = {}
    pending = b""
    deadline = time.monotonic() + timeout_s
    while last not in probes:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 65536) if ready else b""
        assert chunk, f"the probe never reported {last!r}; got {sorted(probes)}"
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.startswith(b'{"probe"'):
                found = json.loads(line)
                probes[found["probe"]] = found
    return probes


def test_app_without_the_edge_has_no_way_to_the_net_door(tmp_path: Path, workspace: Path, audit_dir: Path) -> None:
    """Without app→net: no inet socket (seccomp), no proxy listener in the app's namespace (the shell's is in
    the shell's), no access to the door's mTLS socket (its group admits only edge-listed clients)."""
    net = {"allow": {"shell": ["shell-only.example:443"]}}
    manifest = _manifest(tmp_path, workspace, ["no-edge"], net, [["shell", "net"]], shell=True)
    launcher = subprocess.Popen(_command(manifest, audit_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL)
    try:
        probes = _read_probes_until(launcher, "waiting")
        sid = probes["env"]["sid"]
        app_refused = _connect_in(f"sh-{sid}-app")
        shell_connected = _connect_in(f"sh-{sid}-shell")
        # The second lock: even where the socket file is visible (the host's mount namespace), the app's uid
        # and groups may not connect to it.
        as_app = _connect_as(f"sh-{sid}-app", f"{RUN_ROOT}/{sid}/doors/net.sock")
        procs = Path(f"/sys/fs/cgroup/pids/sharness/{sid}/app/cgroup.procs").read_text()
        app_pids = [int(pid) for pid in procs.split()]
        let_the_app_go(sid, app_pids)
        out, err = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 0, out + err
    _, summary = _split(out)
    assert summary["sid"] == sid and leftovers(sid) == {}

    assert app_refused == errno.ECONNREFUSED, os.strerror(app_refused)  # nothing listens in the app's netns
    assert shell_connected == 0, os.strerror(shell_connected)  # control: the shell's listener is real
    for probe in ("tcp4.proxy", "tcp6.proxy"):
        assert probes[probe] == {"probe": probe, "step": "socket", "errno": "EPERM"}
    # The app does not even see the socket: its mount namespace binds in only edge-listed door sockets.
    assert probes["unix.net_door"] == {"probe": "unix.net_door", "step": "connect", "errno": "ENOENT"}
    assert as_app == errno.EACCES, os.strerror(as_app)  # the socket file's group admits edge-listed clients only
    assert probes["env"]["net_socket"] == f"{RUN_ROOT}/{sid}/doors/net.sock"
    assert probes["env"]["proxy"] == dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"))
    assert probes["env"]["net_door"] is None
    assert probes["curl.proxy_port"]["exit"] == 7
    assert probes["setns"]["errno"] == "EPERM"
    _, events = _audit(summary)
    assert _net_requests(events) == []
