"""Runs confined as the app in tests/integration/test_inject_session.py: git and curl over HTTPS to a bound host
through the net door, with nothing but the environment the launcher gave. One JSON line per probe; then it waits
for `$TMPDIR/sharness-go` while the test scans its memory. It knows no credential, and reports what it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

TRUST = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")


def report(name: str, **fields: Any) -> None:
    print(json.dumps({"probe": name, **fields}), flush=True)


def run(name: str, argv: list[str], cwd: str | None = None) -> None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "app", "GIT_AUTHOR_EMAIL": "app@t",
           "GIT_COMMITTER_NAME": "app", "GIT_COMMITTER_EMAIL": "app@t"}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60, check=False)
    report(name, exit=done.returncode, out=done.stdout[-4000:], err=done.stderr[-2000:])


def main() -> None:
    base = sys.argv[1]  # https://host:port
    tmp = os.environ["TMPDIR"]
    bundle = os.environ.get("SSL_CERT_FILE", "")
    certificates = 0
    if bundle:
        with open(bundle) as trusted:
            certificates = trusted.read().count("BEGIN CERTIFICATE")
    report("env", trust={name: os.environ.get(name) for name in TRUST}, certificates=certificates,
           names=sorted(os.environ))
    if len(sys.argv) > 2:  # no binding: the test's CA, trusted by the app itself (a plain tunnel to the server)
        os.environ["GIT_SSL_CAINFO"] = os.environ["CURL_CA_BUNDLE"] = sys.argv[2]
    clone = os.path.join(tmp, "clone")
    run("clone", ["git", "clone", "-q", f"{base}/project.git", clone])
    if os.path.isdir(clone):
        with open(os.path.join(clone, "FROM-APP"), "w") as new:
            new.write("written by the app\n")
        run("add", ["git", "add", "FROM-APP"], clone)
        run("commit", ["git", "commit", "-qm", "from the app"], clone)
        run("push", ["git", "push", "-q", "origin", "main"], clone)
    curl = ["curl", "-sS", "--max-time", "20"]
    run("curl.echo", [*curl, "-i", f"{base}/echo"])
    run("curl.own_auth", [*curl, "-H", "Authorization: Bearer the-apps-own", f"{base}/echo"])
    run("curl.http2", [*curl, "--http2", "-o", "/dev/null", "-w", "%{http_version}", f"{base}/echo"])
    run("curl.other_host", [*curl, "-H", "Host: elsewhere.sharness.test", "-w", "\n%{http_code}", f"{base}/echo"])
    report("hold")
    go = os.path.join(tmp, "sharness-go")
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.02)


if __name__ == "__main__":
    main()
