"""The real-client check (issue 14.2): pip, run as the app of a real session, downloads and installs a real
package from the real index through the net door, and the audit shows each request with its SNI check.

Where the index's names resolve to addresses the door refuses (on the project's build machines pypi.org and
files.pythonhosted.org resolve to 203.0.113.80, a documentation address, answered by the machine's egress
gateway), the manifest names them as internal destinations with exactly those addresses; where they resolve to
public addresses, plain allow rows are enough. Skipped, saying why, where the index cannot be reached at all.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doors.net import classify
from pki.vocabulary import internal_range_problem
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)

pytestmark = pytest.mark.root

PROBE = str(Path(__file__).with_name("pip_probe.py"))
INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org")
PACKAGE = "six"  # one small pure-Python wheel, no dependencies
CA_FILE = "/etc/ssl/certs/ca-certificates.crt"


def _answers(host: str) -> list[str]:
    infos = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _index_reachable() -> str | None:
    """None when a TLS GET of the index's page for PACKAGE answers 200 from here; else why not."""
    try:
        for host in INDEX_HOSTS:
            _answers(host)
        context = ssl.create_default_context(cafile=CA_FILE)
        with socket.create_connection(("pypi.org", 443), timeout=15) as raw, \
                context.wrap_socket(raw, server_hostname="pypi.org") as tls:
            tls.sendall(f"GET /simple/{PACKAGE}/ HTTP/1.1\r\nHost: pypi.org\r\nConnection: close\r\n\r\n".encode())
            status = tls.recv(64).split(b" ", 2)[1]
    except (OSError, IndexError) as exc:
        return f"the package index is not reachable from this machine ({type(exc).__name__}: {exc})"
    return None if status == b"200" else f"the package index answered {status!r} for /simple/{PACKAGE}/"


def _net_rows() -> dict[str, Any]:
    """allow rows for the index's hosts, and an internal row with exactly their addresses where any is refused."""
    allow = [f"{host}:443" for host in INDEX_HOSTS]
    internal: dict[str, list[str]] = {}
    for host in INDEX_HOSTS:
        answers = _answers(host)
        if all(classify(ipaddress.ip_address(ip)) is None for ip in answers):
            continue
        ranges = [str(ipaddress.ip_network(ip)) for ip in answers]
        problems = [problem for text in ranges if (problem := internal_range_problem(text))]
        if problems:
            pytest.skip(f"{host} resolves to {answers}, which no row can make a destination: {problems}")
        internal[f"{host}:443"] = ranges
    return {"allow": {"app": allow}, **({"internal": {"app": internal}} if internal else {})}


def test_pip_downloads_and_installs_a_real_package_through_the_door(tmp_path: Path) -> None:
    why_not = _index_reachable()
    if why_not is not None:
        pytest.skip(why_not)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    audit_dir = tmp_path / "audit"
    audit_dir.mkdir()
    document = basic_manifest(workspace, [sys.executable, PROBE, PACKAGE])
    document["app"]["process"] = {"max_memory_mb": 1024, "max_pids": 128, "scratch_mb": 256}  # type: ignore[index]
    document["doors"] = {"net": _net_rows()}
    document["edges"] = [["app", "net"]]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(audit_dir), "--json"], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    probes, summary = probes_and_summary(done.stdout)
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}

    assert probes["env"]["https_proxy"] == "http://127.0.0.1:3128"
    for step in ("pip.download", "venv", "pip.install", "import"):
        assert probes[step]["returncode"] == 0, probes[step]
    assert any(name.startswith(f"{PACKAGE}-") and name.endswith(".whl") for name in probes["pip.downloaded"]["files"])
    assert "/venv/lib/" in probes["import"]["tail"][-1]

    events = _audit_events(summary)
    requests = [event for event in events if event.get("kind") == "net.request"]
    hosts = {event["host"] for event in requests}
    assert hosts == set(INDEX_HOSTS), hosts
    for event in requests:  # each tunnel allowed by its row, its ClientHello naming the CONNECT host
        assert (event["decision"], event["status"], event["client_role"]) == ("allow", 200, "app"), event
        assert event["sni"] == event["host"] and event["requested"] == f"{event['host']}:443", event
        assert event["bytes_down"] > 0 and event["address"] in event["answers"], event
    opened = [event for event in events if event.get("kind") == "net.open"]
    assert len(opened) == len(requests)
    verify = subprocess.run([*LAUNCHER, "verify-audit", summary["audit_dir"]], capture_output=True, text=True)
    assert verify.returncode == 0 and "intact" in verify.stdout, verify.stdout + verify.stderr


def _audit_events(summary: dict[str, Any]) -> list[dict[str, Any]]:
    lines = Path(summary["audit_dir"], "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]
