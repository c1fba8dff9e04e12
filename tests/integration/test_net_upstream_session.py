"""The upstream proxy in a real session (root): the net door dials only the corporate proxy, with the credential
the keys door released for the proxy's host in Proxy-Authorization, and the app never holds it.

The proxy is a small CONNECT recorder in a network namespace of its own, joined to this host by a veth pair
(10.250.N.2; the host side 10.250.N.1), named through /etc/hosts for the keys row's `hosts` (the line removed
after). It answers 200 to every CONNECT and records the target, the Proxy-Authorization value and the first
bytes the door relayed. With `resolve: "proxy"` the door asks for the name; the destination never exists.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration._model_upstream import hosts_entry
from tests.integration._neighbour import neighbour
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)
from tests.integration.test_keys_session import _files_under, _secret_source

pytestmark = pytest.mark.root

PROBE = str(Path(__file__).with_name("upstream_probe.py"))
PROXY_PORT = 3128


@dataclass
class Recorder:
    """What the test proxy saw, per connection: the CONNECT head and the first bytes after its 200."""

    heads: list[bytes] = field(default_factory=list)
    first_bytes: list[bytes] = field(default_factory=list)


def _serve(listener: socket.socket, seen: Recorder) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return  # the test closed the listener
        with conn:
            conn.settimeout(20)
            head = b""
            while b"\r\n\r\n" not in head and (data := conn.recv(4096)):
                head += data
            seen.heads.append(head)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            try:
                seen.first_bytes.append(conn.recv(4096))
            except OSError:
                seen.first_bytes.append(b"")


@contextlib.contextmanager
def recording_proxy() -> Iterator[tuple[str, Recorder]]:
    """The recorder at a neighbour's address (10.250.N.2:3128, reachable from this host by a veth); removed after."""
    seen = Recorder()
    with neighbour() as place:
        listener = place.socket()
        try:
            listener.bind((place.address, PROXY_PORT))
            listener.listen(16)
            threading.Thread(target=_serve, args=(listener, seen), daemon=True).start()
            yield place.address, seen
        finally:
            listener.shutdown(socket.SHUT_RDWR)
            listener.close()


def _manifest(tmp_path: Path, proxy_host: str, source: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, PROBE, "pypi.corp.example:443", "evil.example:443"])
    document["doors"] = {
        "net": {"allow": {"app": ["pypi.corp.example:443"]},
                "upstream_proxy": {"address": f"{proxy_host}:{PROXY_PORT}", "secret": "corp-proxy",
                                   "resolve": "proxy"}},
        "keys": {"secrets": {"corp-proxy": {"from": str(source), "roles": ["net"], "hosts": [proxy_host]}}},
    }
    document["edges"] = [["app", "net"], ["net", "keys"]]
    return write_manifest(tmp_path, document)


def test_the_door_dials_only_the_upstream_proxy_with_the_released_credential(tmp_path: Path) -> None:
    value = b"corp-user:" + os.urandom(12).hex().encode()
    source = _secret_source(tmp_path, value)
    proxy_host = f"proxy-{secrets.token_hex(4)}.sharness.test"
    with recording_proxy() as (address, seen), hosts_entry(address, proxy_host):
        manifest = _manifest(tmp_path, proxy_host, source)
        done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                               "--audit-dir", str(tmp_path / "audit"), "--json"], capture_output=True, text=True,
                              timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    probes, summary = probes_and_summary(done.stdout)
    assert leftovers(summary["sid"]) == {}
    assert probes["pypi.corp.example:443"]["status"] == 200
    assert probes["evil.example:443"] == {"probe": "evil.example:443", "status": 403,
                                          "refusal": "not-allowlisted; row=doors.net.allow"}
    # One CONNECT reached the proxy: the allowed one, by name (resolve: proxy), with the released credential.
    [head] = seen.heads
    assert head.startswith(b"CONNECT pypi.corp.example:443 HTTP/1.1\r\n"), head
    assert b"\r\nproxy-authorization: Basic " + base64.b64encode(value) + b"\r\n" in head, head
    assert seen.first_bytes[0][:1] == b"\x16"  # the app's ClientHello, after the SNI check
    # The credential is nowhere the app or a person reads: its output, the launcher's, the audit, the session's files.
    for shown in (done.stdout, done.stderr, json.dumps(probes)):
        assert value.decode() not in shown and base64.b64encode(value).decode() not in shown
    for path in _files_under(tmp_path / "audit", tmp_path / "ws"):
        assert value not in path.read_bytes() and base64.b64encode(value) not in path.read_bytes(), path
    events = [json.loads(line) for line in Path(summary["audit_dir"], "audit.jsonl").read_text().splitlines()]
    [allowed] = [e for e in events if e.get("kind") == "net.request" and e["decision"] == "allow"]
    assert allowed["proxy"] == f"{address}:{PROXY_PORT}" and allowed["sni"] == "pypi.corp.example"
    assert allowed["answers"] == [] and allowed["address"] == ""  # the proxy resolved, not the door
    releases = [e for e in events if e.get("kind") == "keys.release"]
    assert [(e["decision"], e["host"]) for e in releases] == [("release", proxy_host)]
