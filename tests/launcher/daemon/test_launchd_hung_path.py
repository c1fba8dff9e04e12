"""A principal naming a path on a hung mount holds its own request only: the daemon's loop waits for the path
checker without blocking, answers everyone else meanwhile, and refuses the request at the checker's deadline."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _launchd import DAEMON_UID, NOBODY, Daemon, Scratch, policy_document

from launcher.daemon.reach import CHECK_TIMEOUT_S
from pki.vocabulary import EXIT_FAIL_CLOSED

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def hung(scratch: Scratch) -> Iterator[Path]:
    """A FUSE mount nobody serves: its INIT is never answered, so every lookup under it waits (killably)."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("needs /dev/fuse for a mount that never answers")
    mountpoint = scratch.path / "hung"
    mountpoint.mkdir()
    device = os.open("/dev/fuse", os.O_RDWR)
    try:
        options = f"fd={device},rootmode=40000,user_id=0,group_id=0,allow_other"
        subprocess.run(["mount", "-i", "-t", "fuse", "-o", options, "sh-test-hung", str(mountpoint)],
                       check=True, pass_fds=(device,))
        try:
            yield mountpoint
        finally:
            subprocess.run(["umount", "-l", str(mountpoint)], check=False)
    finally:
        os.close(device)  # aborts the connection: whatever still waits on it gets an error


def test_a_path_on_a_hung_mount_holds_only_its_own_request(scratch: Scratch, hung: Path) -> None:
    daemon = Daemon(scratch, policy_document({"uid": NOBODY, "max_sessions": 2}, {"uid": DAEMON_UID})).start()
    try:
        workspace = scratch.workspace("mine", NOBODY)
        app = {"argv": ["/bin/true"], "files": {"read": [str(hung / "tool")], "exec": []},
               "process": {"max_memory_mb": 256, "max_pids": 64}}
        manifest, digest = scratch.manifest("hung", workspace, ["/bin/true"], app=app)
        stuck = daemon.client(NOBODY, str(manifest), "--expect-hash", digest)
        # The daemon has the request once it audits nothing for it yet but answers others: ask it for ps.
        for _ in range(3):
            listed = daemon.run(DAEMON_UID, "ps", "--json")
            assert listed.returncode == 0, listed.stderr
        # Answered while the stuck request was still being checked: its refusal is not written yet.
        assert stuck.poll() is None
        assert not [event for event in daemon.requests("refused") if event.get("manifest") == digest]
        _, err = stuck.communicate(timeout=CHECK_TIMEOUT_S * 6)
        assert stuck.returncode == EXIT_FAIL_CLOSED, err
        assert f"no answer within {CHECK_TIMEOUT_S:g} s" in err
    finally:
        daemon.stop()
    (refused,) = [event for event in daemon.requests("refused") if event.get("manifest") == digest]
    assert "path checker" in refused["reason"]
