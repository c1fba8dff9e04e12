"""verify-audit is anchored in the launcher's key registry, not in the directory it checks (issue 19.10).

Two real sessions write their audit logs; then, as whoever can write the audit directory: cut one log at a
line boundary and re-sign it with a fresh key (a new audit.pub beside it), and copy the other session's
genuine log under the first one's id. Both read "intact" when the directory's own audit.pub is trusted;
against the registry (`<audit root>/../keys/<sid>.pub`, root 0700, written by the launcher) both are broken.
A genuine log copied where no registry vouches reads intact with "unverified key"."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from launcher.lifecycle.audit_verify import head_message, line_hash
from tests.attacks.conftest import SCRATCH_PARENT
from tests.integration._session import LAUNCHER, basic_manifest, manifest_hash, write_manifest

pytestmark = pytest.mark.root


def _session(root: Path, name: str) -> str:
    (root / name).mkdir()
    (root / name / "ws").mkdir()
    manifest = write_manifest(root / name, basic_manifest(root / name / "ws", [sys.executable, "-c", "pass"]))
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(root / "audit"), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sid: str = json.loads(done.stdout)["sid"]
    return sid


@pytest.fixture(scope="module")
def logs() -> Iterator[tuple[Path, str, str]]:
    root = Path(tempfile.mkdtemp(prefix="sh-test-anchor-", dir=SCRATCH_PARENT))
    root.chmod(0o755)
    try:
        yield root, _session(root, "a"), _session(root, "b")
    finally:
        shutil.rmtree(root)


def _verify(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LAUNCHER, "verify-audit", str(directory)], capture_output=True, text=True, timeout=60)


def _resign(directory: Path, keep: int) -> None:
    """Cut the log after `keep` lines and sign that head with a new key, as a forger would."""
    lines = (directory / "audit.jsonl").read_bytes().split(b"\n")[:keep]
    sid = json.loads(lines[0])["sid"]
    key = Ed25519PrivateKey.generate()
    head = line_hash(lines[-1])
    (directory / "audit.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    (directory / "audit.sig").write_text(json.dumps({
        "format": "sharness-audit-v1", "alg": "Ed25519", "sid": sid, "seq": keep, "head": head,
        "signature": base64.b64encode(key.sign(head_message(sid, keep, head))).decode()}))
    (directory / "audit.pub").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def test_a_genuine_log_is_intact_against_the_registry_naming_session_and_key(logs: tuple[Path, str, str]) -> None:
    root, sid, _ = logs
    done = _verify(root / "audit" / sid)
    assert done.returncode == 0 and f"session {sid}," in done.stdout, done.stdout + done.stderr
    assert "the key the registry holds" in done.stdout and "signed by sha256:" in done.stdout
    assert (root / "keys").stat().st_mode & 0o777 == 0o700 and (root / "keys" / f"{sid}.pub").is_file()


def test_a_log_cut_and_resigned_is_broken(logs: tuple[Path, str, str]) -> None:
    root, sid, _ = logs
    forged = root / "audit" / f"{sid}"
    backup = root / "backup-a"
    shutil.copytree(forged, backup)
    try:
        _resign(forged, keep=2)
        done = _verify(forged)
        assert done.returncode == 1, done.stdout  # Was: "intact" (2 lines, signed by the forger's key)
        assert "audit.pub is not the session's key (the registry holds" in done.stdout
    finally:
        shutil.rmtree(forged)
        shutil.copytree(backup, forged)


def test_another_sessions_log_copied_under_this_ones_id_is_refused(logs: tuple[Path, str, str]) -> None:
    root, sid_a, sid_b = logs
    copy = root / "elsewhere" / "audit" / sid_a
    shutil.copytree(root / "audit" / sid_b, copy)
    done = _verify(copy)
    assert done.returncode == 1  # Was: "intact" (it is B's genuine log, signed by B's key beside it)
    assert f"the log is session {sid_b}'s, in the directory of session {sid_a}" in done.stdout, done.stdout


def test_a_genuine_log_where_no_registry_vouches_is_an_unverified_key(logs: tuple[Path, str, str]) -> None:
    root, sid, _ = logs
    copy = root / "other-machine" / "audit" / sid
    shutil.copytree(root / "audit" / sid, copy)
    done = _verify(copy)
    assert done.returncode == 0 and "unverified key" in done.stdout, done.stdout
    assert "no key registered for session" in done.stderr
