"""Bound credentials in a real session (root): the app, with only what the launcher gave it, runs `git clone`, `git
push` and `curl` over HTTPS to a test git server that requires a token. With the binding the net door injects it;
without, the server answers 401. The token is nowhere the app can read: not its environment, not its memory
(scanned through /proc/<pid>/mem; the keys door's memory is the control), not a file it wrote, not a response,
not the audit log.

The git server listens on this machine's own address (a documentation range here), reached through the net door's
internal-destination row and named through /etc/hosts; its test CA is the manifest's doors.net.ca_bundle.
"""

from __future__ import annotations

import base64
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

from tests.integration._git_upstream import GitUpstream, git_upstream
from tests.integration._model_upstream import hosts_entry
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    let_the_app_go,
    manifest_hash,
    pids_with_uids,
    wait_for_session_dir,
    write_manifest,
)
from tests.integration.test_keys_session import _files_under, _holds, _secret_source

pytestmark = pytest.mark.root
PROBE = str(Path(__file__).with_name("inject_probe.py"))
TRUST = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")


def _manifest(tmp_path: Path, upstream: GitUpstream, source: Path | None) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, PROBE, upstream.url])
    if source is None:  # without a binding the app trusts the test CA itself: it meets the real server, a tunnel
        document["app"]["argv"].append(str(upstream.ca_pem))  # type: ignore[index]
        document["app"]["files"]["read"] = [str(upstream.ca_pem)]  # type: ignore[index]
    authority = f"{upstream.host}:{upstream.port}"
    network = str(ipaddress.ip_network(f"{upstream.address}/24", strict=False))
    net: dict[str, Any] = {"allow": {"app": [authority]}, "internal": {"app": {authority: [network]}},
                           "ca_bundle": str(upstream.ca_pem)}
    document["doors"] = {"net": net}
    document["edges"] = [["app", "net"]]
    if source is not None:
        net["inject"] = [{"host": authority, "secret": "gh", "format": "basic"}]
        document["doors"]["keys"] = {"secrets": {"gh": {"from": str(source), "roles": ["net"], "hosts": [upstream.host],
                                                        "per_minute": 1000}}}
        document["edges"] = [["app", "net"], ["net", "keys"]]
    return write_manifest(tmp_path, document)


def _probes_until_hold(stream: Any) -> dict[str, Any]:
    probes: dict[str, Any] = {}
    while "hold" not in probes:
        line = stream.readline()
        assert line, "the launcher ended before the probe reported"
        if line.startswith('{"probe"'):
            found = json.loads(line)
            probes[found["probe"]] = found
    return probes


def _session(tmp_path: Path, upstream: GitUpstream, token: bytes,
             source: Path | None) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Run the probe as the app; while it holds, scan the app's memory and files for `token`. (probes, summary, out)"""
    manifest = _manifest(tmp_path, upstream, source)
    stderr = (tmp_path / "stderr").open("w+")
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                                 "--audit-dir", str(tmp_path / "audit"), "--json"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        assert launcher.stdout is not None
        probes = _probes_until_hold(launcher.stdout)
        sid = wait_for_session_dir(launcher.pid)
        app_pids = pids_with_uids({pwd.getpwnam(f"sh-{sid}-app").pw_uid})
        if source is not None:
            (keys_pid,) = pids_with_uids({pwd.getpwnam(f"sh-{sid}-keys").pw_uid})
            assert _holds(keys_pid, token)  # the control: the scan finds the token where it lives
        assert app_pids
        for pid in app_pids:
            for form in _forms(token):
                assert not _holds(pid, form), f"the app {pid} holds a form of the token"
            assert token not in Path(f"/proc/{pid}/environ").read_bytes()
        app_tmp = next(Path(f"/proc/{pid}/root/run/sharness/{sid}/app") for pid in app_pids
                       if Path(f"/proc/{pid}/root/run/sharness/{sid}/app/tmp").is_dir())
        for path in _files_under(app_tmp):
            assert not any(form in path.read_bytes() for form in _forms(token)), path
        let_the_app_go(sid, app_pids)
        out, _ = launcher.communicate(timeout=120)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    stderr.seek(0)
    assert launcher.returncode == 0, stderr.read()
    summary = json.loads(out[out.index("{\n"):])
    assert leftovers(summary["sid"]) == {}
    return probes, summary, out


def _forms(token: bytes) -> tuple[bytes, ...]:
    return token, base64.b64encode(b"x-access-token:" + token)


def _events(summary: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    text = Path(summary["audit_dir"], "audit.jsonl").read_text()
    return text, [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def token() -> bytes:
    return b"ghp_" + secrets.token_hex(18).encode()


def test_git_and_curl_get_the_bound_token_and_the_app_never_holds_it(tmp_path: Path, token: bytes) -> None:
    host = f"git-{secrets.token_hex(4)}.sharness.test"
    source = _secret_source(tmp_path, token)
    with git_upstream(tmp_path, host, token) as upstream, hosts_entry(upstream.address, host):
        probes, summary, out = _session(tmp_path, upstream, token, source)
        log = subprocess.run(["git", "-C", str(upstream.root / "project.git"), "log", "--format=%s", "main"],
                             capture_output=True, text=True, check=True).stdout.split()
    env = probes["env"]
    bundle = env["trust"]["SSL_CERT_FILE"]
    assert bundle.endswith("/app/egress-bundle.pem") and set(env["trust"].values()) == {bundle}
    assert env["certificates"] > 1  # the system store plus the egress CA
    for step in ("clone", "add", "commit", "push"):
        assert probes[step]["exit"] == 0, probes[step]
    assert log == ["from", "the", "app", "seed"]
    assert all(request["authorised"] for request in upstream.log.requests[:-4])  # the four curls follow
    echo = probes["curl.echo"]
    assert echo["exit"] == 0 and "x-echo: ****" in echo["out"].lower() and "you sent: ****" in echo["out"], echo
    own = probes["curl.own_auth"]
    assert own["exit"] == 0 and "the-apps-own" not in own["out"], own
    assert "the-apps-own" not in json.dumps(upstream.log.requests)  # dropped before it left the door
    assert probes["curl.http2"]["out"] == "1.1", probes["curl.http2"]
    other = probes["curl.other_host"]
    assert other["out"].endswith("421") and "host-mismatch" in other["out"], other
    text, events = _events(summary)
    for form in _forms(token):
        assert form.decode() not in text and form.decode() not in out + json.dumps(probes)
    for path in _files_under(tmp_path / "audit", tmp_path / "ws"):
        assert not any(form in path.read_bytes() for form in _forms(token)), path
    injected = [e for e in events if e.get("kind") == "net.request" and e.get("credential_name") == "gh"]
    assert injected, json.dumps([e for e in events if e.get("kind") == "net.request"][:2])
    assert {e["path"] for e in injected} >= {"/project.git/info/refs", "/project.git/git-upload-pack",
                                                          "/project.git/git-receive-pack"}
    assert all(e["host"] == host and e["reason"] == "injected" and "?" not in e["path"] for e in injected)
    releases = [e for e in events if e.get("kind") == "keys.release"]
    assert len(releases) == len(injected) and {e["decision"] for e in releases} == {"release"}


def test_without_the_binding_git_gets_the_servers_401(tmp_path: Path, token: bytes) -> None:
    host = f"git-{secrets.token_hex(4)}.sharness.test"
    with git_upstream(tmp_path, host, token) as upstream, hosts_entry(upstream.address, host):
        probes, summary, _ = _session(tmp_path, upstream, token, None)
    assert all(value is None for value in probes["env"]["trust"].values())
    clone = probes["clone"]
    assert clone["exit"] != 0 and ("could not read Username" in clone["err"] or "401" in clone["err"]), clone
    assert upstream.log.requests and not any(request["authorised"] for request in upstream.log.requests)
    assert "you sent: \n" in probes["curl.echo"]["out"] or probes["curl.echo"]["out"].endswith("you sent: ")
    _, events = _events(summary)
    assert not [e for e in events if e.get("credential_name")]
    assert os.path.exists(tmp_path / "audit")
