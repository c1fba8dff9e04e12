"""The app builds in its TMPDIR what once made teardown and every later gc fail for good: a 5 000-level chain
(shutil.rmtree recursed, and held an fd per level), links to /etc, 000 directories. Held first by the
scratch tmpfs: TMPDIR is in the app's mount namespace only, so the tree never reaches the host and dies with
the namespace (tests/attacks/test_scratch.py). Behind it, for whatever tree teardown does meet, the
launcher's iterative fd-based tree removal (launcher/lifecycle/tree_removal.py, tests/launcher/lifecycle/
test_tree_removal.py); the app's SVID is journaled on its own and removed first, so even a tree removal
that fails cannot leave the key on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attacks._live import LiveSession
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent


@pytest.fixture
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="sh-test-deep-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    for name in ("ws", "outside"):
        (root / name).mkdir()
        (root / name).chmod(0o755)
    (root / "outside" / "precious").write_bytes(b"precious\n")
    try:
        yield root
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)


def _session(scratch: Path) -> LiveSession:
    manifest = basic_manifest(scratch / "ws", [sys.executable, str(HERE / "deep_tree_app.py"),
                                               str(scratch / "outside")])
    return LiveSession(write_manifest(scratch, manifest), scratch / "audit", scratch / "stderr")


def _untouched(scratch: Path) -> None:
    """The links led to /etc and to a directory of the test's: what they point at is all still there."""
    assert (scratch / "outside" / "precious").read_bytes() == b"precious\n"
    assert all(os.path.isfile(f"/etc/{name}") for name in ("passwd", "shadow", "group", "hostname"))


def test_a_5000_deep_tree_in_tmpdir_is_removed_and_the_session_ends_cleanly(scratch: Path) -> None:
    live = _session(scratch)
    try:
        built = live.wait_probe("tree.built", timeout_s=120)
        assert built["depth"] == 5000
        assert os.listdir(built["tmpdir"]) == []  # the host's TMPDIR is an empty mount point: the tree is not here
        live.send("end")
        summary = live.finish(timeout_s=120)
    finally:
        live.stop()
    assert summary["exit_code"] == 0, live.stderr()[-2000:]
    assert summary["teardown_errors"] == []
    assert leftovers(summary["sid"]) == {}
    assert not os.path.lexists(built["tmpdir"])
    _untouched(scratch)


def _mount_point_listed_before(directory: str, name: str) -> str:
    """A new directory in `directory` that a walk meets before `name` (ext4 lists in hash order)."""
    candidates = [f"sh-test-mnt-{number:02d}" for number in range(64)]
    for candidate in candidates:
        os.mkdir(f"{directory}/{candidate}")
    listed = os.listdir(directory)
    before = [entry for entry in listed[: listed.index(name)] if entry in candidates]
    if not before:
        pytest.skip(f"none of 64 names is listed before {name} here")
    return f"{directory}/{before[0]}"


def test_the_svid_is_gone_even_when_the_tree_removal_fails(scratch: Path) -> None:
    """The test mounts a tmpfs in the app's private directory where the walk meets it before the SVID file
    (the removal refuses to cross a mount): that tree stays for gc, the SVID does not, because it is
    journaled and removed on its own. After the unmount, gc removes the rest."""
    live = _session(scratch)
    mounted = ""
    try:
        built = live.wait_probe("tree.built", timeout_s=120)
        private = os.path.dirname(built["tmpdir"])
        assert os.path.isfile(f"{private}/svid.pem")
        mount_point = _mount_point_listed_before(private, "svid.pem")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sh-test-deep", mount_point], check=True)
        mounted = mount_point
        live.send("end")
        summary = live.finish(timeout_s=120)
        sid = summary["sid"]
        assert summary["exit_code"] == 0
        assert any("mount point" in error for error in summary["teardown_errors"]), summary["teardown_errors"]
        assert not os.path.lexists(f"{private}/svid.pem")
        assert os.path.isdir(private) and not os.path.lexists(built["tmpdir"])  # the deep chain went
        _untouched(scratch)
    finally:
        if mounted:
            subprocess.run(["umount", mounted], check=False)
        live.stop()
    done = subprocess.run([*LAUNCHER, "gc"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftovers(sid) == {}
