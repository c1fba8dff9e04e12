"""The workspace owner's ids, and the owners of the app's paths, are never a component's (issue 19.3).

A workspace (or a directory in `app.files.read`) owned by an id with no account: were that id handed to the
app, the app would own the person's files (chmod 0777, setuid bits, exec bits: nothing Landlock mediates).
Real sessions; the allocator's draw is pinned so that, left alone, it would hand out exactly those ids first
(tests/attacks/pinned_ids_launcher.py). Held by launcher/lifecycle/path_owners.py (the avoid set, and the
refusal of owners in the session span) and launcher/kernel/session_ids.py."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher.kernel import session_ids
from launcher.policy import id_alloc
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import LAUNCHER, basic_manifest, leftovers, manifest_hash, write_manifest

pytestmark = pytest.mark.root

HERE = Path(__file__).parent
UNUSED = 0x6800_0000  # below the session span, above login.defs' and /etc/subuid's ranges: no allocator's


@pytest.fixture
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="sh-test-owner-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    try:
        yield root
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)


def _unowned_ids() -> tuple[int, int]:
    """Two consecutive ids no account, process or file holds."""
    first = UNUSED + 64 * secrets.randbelow(4096)
    assert not {first, first + 1} & session_ids.ids_in_use()
    return first, first + 1


def _manifest(root: Path, workspace_id: int, shared_id: int) -> Path:
    (root / "ws").mkdir()
    (root / "shared").mkdir(mode=0o755)
    os.chown(root / "shared", shared_id, shared_id)
    document = basic_manifest(root / "ws", [sys.executable, str(HERE / "owner_app.py"), str(root / "shared")])
    os.chown(root / "ws", workspace_id, workspace_id)
    document["app"]["files"]["read"] = [str(root / "shared")]  # type: ignore[index]
    document["doors"]["net"] = {"allow": {"app": []}}  # type: ignore[index]  # one more component with a user
    document["edges"] = [["app", "fs"], ["app", "net"]]
    return write_manifest(root, document)


def _run(launcher: list[str], manifest: Path, audit: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*launcher, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                           "--audit-dir", str(audit), "--json"], capture_output=True, text=True, timeout=120)


def test_ids_of_the_workspace_and_app_paths_are_never_handed_out(scratch: Path) -> None:
    workspace_id, shared_id = _unowned_ids()
    manifest = _manifest(scratch, workspace_id, shared_id)
    pinned = [sys.executable, str(HERE / "pinned_ids_launcher.py"), str(workspace_id)]
    done = _run(pinned, manifest, scratch / "audit")
    probes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"probe"')]
    assert done.returncode == 0 and probes, done.stdout + done.stderr
    owner = probes[0]
    held = {owner["uid"], owner["gid"], *owner["groups"]}
    handed_out = id_alloc.ledger_ids(Path(session_ids.LEDGER).read_text())
    assert not held & {workspace_id, shared_id}, owner
    assert workspace_id not in handed_out and shared_id not in handed_out
    assert min(held) >= workspace_id + 2  # the pin did reach the allocator: it went on from the next ids
    # EROFS: the read path is a read-only bind (first); behind it EPERM, not the owner (the ids above). Was: "changed"
    assert owner["chmod"] in (os.strerror(30), os.strerror(1)), owner
    assert os.stat(scratch / "shared").st_mode & 0o777 == 0o755
    assert leftovers(owner["sid"]) == {}


@pytest.mark.parametrize("row", ["workspace", "app.files.read"])
def test_a_path_owned_by_an_id_of_the_session_span_is_refused(scratch: Path, row: str) -> None:
    """Such an id has no account to avoid: another launcher may hand it out at any moment."""
    spanned = id_alloc.SESSION_IDS[0] + 64 * secrets.randbelow(4096)
    manifest = _manifest(scratch, spanned if row == "workspace" else 65534,
                         spanned if row == "app.files.read" else 65534)
    done = _run(LAUNCHER, manifest, scratch / "audit")
    assert done.returncode != 0 and not [line for line in done.stdout.splitlines() if '"probe"' in line]
    assert f"is owned by uid {spanned}, an id the launcher hands to session accounts" in done.stderr, done.stderr
    assert f"(manifest row: {row})" in done.stderr and "nothing was created" in done.stderr
    checked = subprocess.run([*LAUNCHER, "check", str(manifest)], capture_output=True, text=True, timeout=60)
    said = [line for line in checked.stdout.splitlines() if line.startswith(f"  {row}: ")]
    assert "refused on this machine" in checked.stdout, checked.stdout
    assert len(said) == 1 and f"uid {spanned}" in said[0], checked.stdout
