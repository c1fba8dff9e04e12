"""The provider key, from the keys door to an HTTPS upstream through the model door, in a real session (root).

The upstream is the twin behind HTTPS with a test CA (the manifest's `ca_bundle`), on this machine's own
address (allowed by `internal_ranges`, as a private gateway would be), named through /etc/hosts. It records the
x-api-key it got: the released key, not what the app sent. The key is nowhere the app can read: not its
environment, not its memory (scanned as root through /proc/<pid>/mem, the keys door's memory the control), not
the response it got, not the audit log or any file the session wrote.
"""

from __future__ import annotations

import ipaddress
import json
import os
import pwd
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration._model_upstream import hosts_entry, https_twin
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    let_the_app_go,
    manifest_hash,
    pids_with_uids,
    write_manifest,
)
from tests.integration.test_keys_session import _files_under, _holds, _secret_source

pytestmark = pytest.mark.root
PROBE = str(Path(__file__).with_name("model_probe.py"))


def _manifest(tmp_path: Path, url: str, address: str, ca_pem: Path, source: Path, host: str) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, PROBE, "hold"])
    network = str(ipaddress.ip_network(f"{address}/24", strict=False))
    document["doors"] = {
        "keys": {"secrets": {"anthropic": {"from": str(source), "roles": ["model"], "hosts": [host]}}},
        "model": {"upstream": url, "secret": "anthropic", "budget_microusd": 1_000_000,
                  "internal_ranges": [network], "ca_bundle": str(ca_pem)},
    }
    document["edges"] = [["app", "model"], ["model", "keys"]]
    return write_manifest(tmp_path, document)


def test_the_released_key_reaches_the_upstream_and_nowhere_the_app_can_read(tmp_path: Path) -> None:
    value = b"sk-ant-model-test-" + os.urandom(16).hex().encode()
    source = _secret_source(tmp_path, value)
    host = f"upstream-{secrets.token_hex(4)}.sharness.test"
    with https_twin(tmp_path, host) as upstream, hosts_entry(upstream.address, host):
        manifest = _manifest(tmp_path, upstream.url, upstream.address, upstream.ca_pem, source, host)
        stderr = (tmp_path / "stderr").open("w+")
        launcher = subprocess.Popen(
            [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
             str(tmp_path / "audit"), "--json"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
            text=True)
        try:
            assert launcher.stdout is not None
            probes: dict[str, Any] = _probe_lines_until(launcher.stdout, "hold")
            sid = _sid_of(launcher.pid)
            (keys_pid,) = pids_with_uids({pwd.getpwnam(f"sh-{sid}-keys").pw_uid})
            app_pids = pids_with_uids({pwd.getpwnam(f"sh-{sid}-app").pw_uid})
            assert app_pids and _holds(keys_pid, value)  # the control: the scan finds the key where it lives
            for app_pid in app_pids:
                assert not _holds(app_pid, value)
                assert value not in Path(f"/proc/{app_pid}/environ").read_bytes()
            let_the_app_go(sid, app_pids)
            out, _ = launcher.communicate(timeout=120)
        finally:
            if launcher.poll() is None:
                launcher.kill()
                launcher.wait()
        stderr.seek(0)
        errors = stderr.read()
    assert launcher.returncode == 0, errors
    assert probes["hold"]["text"].startswith("twin:")
    (sent,) = upstream.seen
    headers = dict(sent.headers)
    assert headers[b"x-api-key"] == value  # released by keys for this call, sent as the API wants it
    assert b"authorization" not in headers and b"sharness-model-door-holds-the-key" not in b"".join(headers.values())
    assert value.decode() not in json.dumps(probes) and value.decode() not in out + errors
    summary = json.loads(out[out.index("{\n"):])
    assert leftovers(summary["sid"]) == {}
    for path in _files_under(tmp_path / "audit", tmp_path / "ws"):
        assert value not in path.read_bytes(), path
    events = [json.loads(line) for line in Path(summary["audit_dir"], "audit.jsonl").read_text().splitlines()]
    releases = [event for event in events if event.get("kind") == "keys.release"]
    assert [event["decision"] for event in releases] == ["release"] and releases[0]["host"] == host
    (call,) = [event for event in events if event.get("kind") == "model.call"]
    assert call["upstream"] == f"https://{host}:{upstream.port}" and call["ended"] == "complete"


def _probe_lines_until(stream: Any, last: str) -> dict[str, Any]:
    probes: dict[str, Any] = {}
    while last not in probes:
        line = stream.readline()
        assert line, "the launcher ended before the probe reported"
        if line.startswith('{"probe"'):
            found = json.loads(line)
            probes[found["probe"]] = found
    return probes


def _sid_of(launcher_pid: int) -> str:
    from tests.integration._session import wait_for_session_dir

    return wait_for_session_dir(launcher_pid)



