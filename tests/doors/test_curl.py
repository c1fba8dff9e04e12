"""curl (OpenSSL backend) with --cert --key --cacert --unix-socket reaches a door on an allowed edge only.

The URL's host is the door's role: curl checks it against the leaf's CN (the role), since the SVID has
no DNS name; the door checks curl's SVID and the edge.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from doors._transport.testing import Session, doors_in_thread, scratch_dir
from pki.testing import SessionPKI

CURL = shutil.which("curl") or "/usr/bin/curl"
pytestmark = pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")


@pytest.fixture
def fs_door() -> Iterator[tuple[Session, str]]:
    with scratch_dir() as directory:
        s = Session(SessionPKI.create(), directory)
        with doors_in_thread(s, {"fs": "fs"}) as doors:
            yield s, str(doors["fs"])


def _curl(s: Session, socket_path: str, role: str | None,
          url: str = "https://fs/v0/hello") -> subprocess.CompletedProcess[str]:
    argv = [CURL, "-sS", "--tlsv1.3", "--cacert", s.pem_path("bundle", s.pki.bundle_pem()),
            "--unix-socket", socket_path, url]
    if role is not None:
        argv[1:1] = ["--cert", s.svid_path(role), "--key", s.svid_path(role)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_curl_version_has_an_openssl_backend_with_tls13() -> None:
    version = subprocess.run([CURL, "--version"], capture_output=True, text=True, check=True).stdout
    assert "OpenSSL/3" in version and "UnixSockets" in version


def test_curl_reaches_a_door_on_an_allowed_edge(fs_door: tuple[Session, str]) -> None:
    s, path = fs_door
    result = _curl(s, path, "app", "https://fs/v0/whoami")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"peer_role": "app", "peer_id": s.pki.identity("app").uri()}


def test_curl_is_refused_on_an_edge_not_listed(fs_door: tuple[Session, str]) -> None:
    s, path = fs_door
    result = _curl(s, path, "net")
    shape = json.loads(result.stdout)
    assert (shape["error"], shape["who"]) == ("edges", "fs")
    assert "edge net->fs is not in the manifest row `edges`" in shape["detail"]


def test_curl_without_a_certificate_reads_the_alert(fs_door: tuple[Session, str]) -> None:
    s, path = fs_door
    result = _curl(s, path, None)
    assert result.returncode != 0
    assert "alert certificate required" in result.stderr
