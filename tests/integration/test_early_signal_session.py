"""An end signal while the session is being created (journaled, no supervisor listening yet) ends the session in
order: everything it made is removed, the launcher exits 128+N. It used to take SIGTERM's default action and
leave users, namespaces and cgroups for the next sweep (seen when a daemon stopped a session that had just
reported its sid)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pki.vocabulary import EXIT_SIGNAL_BASE
from tests.integration._session import basic_manifest, leftovers, manifest_hash, write_manifest

pytestmark = pytest.mark.root

# The launcher's own `run`, as sharness-launchd's runner calls it, with a hook that signals the launcher the
# moment the journal exists: the worst moment, every resource still to be created.
RUN = """
import argparse, os, signal, sys
from launcher.commands.run import run
def journaled(sid):
    print(sid, flush=True)
    os.kill(os.getpid(), getattr(signal, sys.argv[3]))
args = argparse.Namespace(manifest=sys.argv[1], expect_hash=sys.argv[2], best_effort=True, audit_dir=sys.argv[4],
                          json=False, via_daemon=False, on_journaled=journaled, caller_uid=None)
sys.exit(run(args))
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_the_session_is_created_ends_it_in_order(tmp_path: Path, name: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/sleep", "600"]))
    done = subprocess.run([sys.executable, "-c", RUN, str(manifest), manifest_hash(manifest), name,
                           str(tmp_path / "audit")], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    sid = done.stdout.split()[0]
    number = getattr(signal, name)
    assert done.returncode == EXIT_SIGNAL_BASE + number, (done.returncode, done.stderr[-2000:])
    assert f"the launcher received {name}" in done.stderr
    assert leftovers(sid) == {}
