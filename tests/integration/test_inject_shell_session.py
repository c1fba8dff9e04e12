"""Bound credentials for the shell's commands (root, a real session): a command the app runs through the shell
door reaches a bound host through the net door, trusts the leaf the door answers with (the shell door gives each
command the system store plus the session's egress CA, as the launcher gives the app), and gets the token
injected; the command's output and the audit never hold it. Without the trust variables curl refuses the leaf
(exit 60): the test that fails when the shell's commands are not given the egress CA.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration._git_upstream import GitUpstream, git_upstream
from tests.integration._model_upstream import hosts_entry
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)
from tests.integration._shell import PROBE, PY, case, final, output
from tests.integration.test_keys_session import _secret_source

pytestmark = pytest.mark.root
CURL = "curl -sS -o /dev/null --max-time 20 -w '%{http_code}'"
TRUST = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")


def _document(workspace: Path, upstream: GitUpstream, source: Path, cases: list[dict[str, Any]]) -> dict[str, Any]:
    document = basic_manifest(workspace, [PY, PROBE, json.dumps(cases)])
    authority = f"{upstream.host}:{upstream.port}"
    network = str(ipaddress.ip_network(f"{upstream.address}/24", strict=False))
    document["doors"] = {
        "shell": {"workspace": "read"},
        "net": {"allow": {"shell": [authority]}, "internal": {"shell": {authority: [network]}},
                "ca_bundle": str(upstream.ca_pem), "inject": [{"host": authority, "secret": "gh", "format": "basic"}]},
        "keys": {"secrets": {"gh": {"from": str(source), "roles": ["net"], "hosts": [upstream.host],
                                    "per_minute": 1000}}},
    }
    document["edges"] = [["app", "shell"], ["shell", "net"], ["net", "keys"]]
    return document


def test_a_shell_command_trusts_the_egress_ca_and_gets_the_bound_token_injected(tmp_path: Path) -> None:
    token = b"ghp_" + secrets.token_hex(18).encode()
    host = f"git-{secrets.token_hex(4)}.sharness.test"
    source = _secret_source(tmp_path, token)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    trust = "; ".join(f'echo {name}=${name}' for name in TRUST)
    cases = [case("trust", script=f"{trust}; grep -c 'BEGIN CERTIFICATE' \"$SSL_CERT_FILE\""),
             case("curl", script=f"{CURL} 'URL/project.git/info/refs?service=git-upload-pack'; echo \" rc=$?\"")]
    with git_upstream(tmp_path, host, token) as upstream, hosts_entry(upstream.address, host):
        cases[1]["body"]["script"] = cases[1]["body"]["script"].replace("URL", upstream.url)
        manifest = write_manifest(tmp_path, _document(workspace, upstream, source, cases))
        done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                               "--audit-dir", str(tmp_path / "audit")],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        requests = list(upstream.log.requests)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    probes, summary = probes_and_summary(done.stdout)
    assert leftovers(summary["sid"]) == {}
    seen = output(probes["trust"], "stdout").decode().split()
    bundles = {line.partition("=")[2] for line in seen if "=" in line}
    assert len(bundles) == 1 and next(iter(bundles)).endswith("/.sharness-egress-bundle.pem"), seen
    assert int(seen[-1]) > 1  # the system store and the egress CA
    curl = output(probes["curl"], "stdout").decode()
    said = curl + output(probes["curl"], "stderr").decode()
    assert final(probes["curl"])["exit_code"] == 0 and curl == "200 rc=0\n", said
    assert requests and requests[-1]["authorised"], requests
    text = Path(summary["audit_dir"], "audit.jsonl").read_text()
    assert token.decode() not in text + done.stdout + done.stderr
    injected = [json.loads(line) for line in text.splitlines() if '"credential_name": "gh"' in line
                or '"credential_name":"gh"' in line]
    assert injected and all(event["client_role"] == "shell" for event in injected), injected
