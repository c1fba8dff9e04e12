"""app.bind_tcp in a real session: the app (a coding agent's test server) binds and listens on the ports the row
names, in its own network namespace, and serves itself there; any other port is refused by Landlock, and
without the row listen() is refused by seccomp where TCP may be made."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration._session import LAUNCHER, basic_manifest, manifest_hash, probes_and_summary, write_manifest

pytestmark = pytest.mark.root

APP = r"""
import json, os, socket, threading
def probe(name, act):
    try:
        print(json.dumps({"probe": name, "ok": act()}), flush=True)
    except OSError as exc:
        print(json.dumps({"probe": name, "errno": exc.errno}), flush=True)
def serve_once():
    server = socket.create_server(("127.0.0.1", 8765))
    def answer():
        conn, _ = server.accept()
        conn.sendall(conn.recv(64).upper())
        conn.close()
    threading.Thread(target=answer).start()
    with socket.create_connection(("127.0.0.1", 8765)) as client:
        client.sendall(b"ping")
        return client.recv(64).decode()
probe("serve_listed_port", serve_once)
probe("bind_other_port", lambda: socket.create_server(("127.0.0.1", 8766)).getsockname()[1])
def implicit():  # listen() on an unbound socket binds an ephemeral port itself
    sock = socket.socket()
    sock.listen()
    return sock.getsockname()[1] > 0
probe("listen_unbound", implicit)
def unix_server():
    path = os.path.join(os.environ["TMPDIR"], "s.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    return True
probe("unix_server", unix_server)
"""


def _run(tmp_path: Path, app_rows: dict[str, object]) -> dict[str, dict[str, object]]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, "-c", APP])
    document["app"].update(app_rows)  # type: ignore[attr-defined]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(tmp_path / "audit"), "--json"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return probes_and_summary(done.stdout)[0]


def test_the_app_serves_itself_on_the_ports_it_may_bind_and_no_other(tmp_path: Path) -> None:
    probes = _run(tmp_path, {"bind_tcp": [8765]})
    assert probes["serve_listed_port"]["ok"] == "PING"
    assert probes["bind_other_port"]["errno"] == errno.EACCES  # Landlock: 8766 is not in app.bind_tcp
    assert probes["unix_server"]["ok"] is True
    # The gap the row opens, measured: listen() on an unbound socket binds an ephemeral port by itself, which
    # Landlock (no listen hook) does not see; it is in the app's own netns, reachable by its own processes only.
    assert probes["listen_unbound"]["ok"] is True


def test_without_the_row_and_edges_the_app_has_no_tcp_server(tmp_path: Path) -> None:
    # No edge to net or model and no bind row: no internet socket at all. An app with TCP but no bind row gets
    # EPERM from listen(): test_confine.py::test_listen_is_refused_where_tcp_may_be_made_but_no_port_bound.
    probes = _run(tmp_path, {})
    assert probes["serve_listed_port"]["errno"] in (errno.EAFNOSUPPORT, errno.EPERM)
    assert probes["unix_server"]["ok"] is True  # no inet at all here: a Unix listener is all it could have
