"""What a person approves is what they see, and names mean what they look like (issue 19, items 8 and 9).

As the manifest's author: a granted path holding a bidi override (`/srv/invoice-\\u202egnp.sh` shows as
`/srv/invoice-hs.png`) is refused, 65, naming the pointer and the code point, and nothing the launcher prints
carries the character. At the terminal: a confirmation that types only the first 12 hex digits (what a 2^48
search forges) is refused, 125, nothing created. As the app, through the fs door: the names are refused (row
`path`, 400). On a case-folding workspace: read_only `.git` holds under `.GIT`.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import casefold_ext4
from tests.attacks.attack_fs import MISREAD_NAMES
from tests.attacks.conftest import AttackRun
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    manifest_hash,
    session_dirs,
    session_owner,
    write_manifest,
)

BIDI_PATH = "/srv/invoice-\u202egnp.sh"


def _sessions_of(launcher_pid: int) -> list[Path]:
    """The sessions this launcher journaled (other engineers' sessions on the machine do not count)."""
    return [path for path in session_dirs() if session_owner(path) == launcher_pid]


def _bidi_manifest(tmp_path: Path) -> Path:
    document = {
        "sharness": "manifest/v0",
        "session": {"name": "names", "trust_domain": "names.sharness.test", "ttl_s": 600},
        "workspace": str(tmp_path / "ws"),
        "app": {"argv": ["/bin/true"], "files": {"read": [BIDI_PATH]},
                "process": {"max_memory_mb": 64, "max_pids": 8}},
    }
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")  # the raw character, as a file
    return path


@pytest.mark.parametrize("as_json", [False, True])
def test_check_refuses_a_bidi_path_naming_pointer_and_code_point(tmp_path: Path, as_json: bool) -> None:
    manifest = _bidi_manifest(tmp_path)
    done = subprocess.run([*LAUNCHER, "check", str(manifest), *(["--json"] if as_json else [])],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    said = done.stdout + done.stderr
    assert done.returncode == 65, said
    assert "\u202e" not in said  # not even in the message that quotes the path
    if as_json:
        refusal = json.loads(done.stdout)
        assert refusal["pointer"] == "/app/files/read/0"
        said = refusal["message"] + refusal["hint"]
    assert "/app/files/read/0" in said and "U+202E" in said and "invoice-\\u{202E}gnp.sh" in said


@pytest.mark.root
def test_run_refuses_it_before_anything_is_created(tmp_path: Path) -> None:
    manifest = _bidi_manifest(tmp_path)
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest), "--expect-hash", "sha256:" + "0" * 64],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    _, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 65, err
    assert "U+202E" in err and "\u202e" not in err
    assert _sessions_of(launcher.pid) == []


def _read_until(master: int, marker: bytes, deadline: float) -> bytes:
    seen = b""
    while marker not in seen:
        assert time.monotonic() < deadline, seen.decode(errors="replace")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other side closed
            break
        seen += chunk
    return seen


@pytest.mark.root
def test_a_twelve_digit_confirmation_is_refused_at_the_terminal(tmp_path: Path) -> None:
    """The forger's manifest shares the approved hash's first 12 digits (2^48 hashes, hours on one GPU); the
    person types the digits they compared. Before: the gate checked exactly those 12 and ran it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manifest = write_manifest(tmp_path, basic_manifest(workspace, ["/bin/true"]))
    digits = manifest_hash(manifest).removeprefix("sha256:")
    master, slave = pty.openpty()
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest)], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        shown = _read_until(master, b"to run it: ", time.monotonic() + 60)
        assert " ".join(digits[at:at + 4] for at in range(0, 64, 4)).encode() in shown  # the whole fingerprint
        os.write(master, digits[:12].encode() + b"\n")
        answer = _read_until(master, b"nothing was created", time.monotonic() + 60)
        assert launcher.wait(timeout=60) == 125
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        os.close(master)
    assert b"only 12 of the hash's 64 hex digits were typed" in answer
    assert _sessions_of(launcher.pid) == []


@pytest.mark.root
@pytest.mark.parametrize("probe", [*MISREAD_NAMES, "fs.name_bidi_rename"])
def test_the_fs_door_refuses_names_a_person_would_misread(attacks: AttackRun, probe: str) -> None:
    seen = attacks.a.probes[probe]
    assert (seen["status"], seen["row"]) == (400, "path"), seen
    assert "U+" in seen["detail"] and seen["detail"].isprintable(), seen


@pytest.mark.root
def test_no_misread_name_landed_in_the_workspace(attacks: AttackRun) -> None:
    names = [name for _, dirs, files in os.walk(attacks.workspace_a) for name in (*dirs, *files)]
    assert names and all(name.isprintable() for name in names), names
    assert (attacks.workspace_a / "bin" / "tool.sh").exists()  # the rename to a bidi name did not happen


APP = """
import json
from doors.fs.client import DoorRefused, FsClient
with FsClient.from_env() as fs:
    for probe, path in [("upper", ".GIT/config"), ("mixed", ".Git/hooks/pre-commit"), ("control", "ok.txt")]:
        try:
            fs.write(path, b"planted\\n")
            print(json.dumps({"probe": probe, "status": 200, "row": None}), flush=True)
        except DoorRefused as exc:
            print(json.dumps({"probe": probe, "status": exc.refusal.status, "row": exc.refusal.row}), flush=True)
"""


@pytest.mark.root
@pytest.mark.skipif(casefold_ext4.unavailable() is not None, reason=casefold_ext4.unavailable() or "")
def test_read_only_holds_on_a_casefold_workspace_under_another_case(tmp_path: Path) -> None:
    with casefold_ext4.casefold_mount() as mount:
        workspace = casefold_ext4.casefold_dir(mount / "ws")
        (workspace / ".git" / "hooks").mkdir(parents=True)
        (workspace / ".git" / "config").write_text("[core]\n")
        manifest = write_manifest(tmp_path, basic_manifest(workspace, [sys.executable, "-c", APP]))
        done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                               "--audit-dir", str(tmp_path / "audit")],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        probes = {line["probe"]: line for line in map(json.loads, done.stdout.splitlines()) if "probe" in line}
        assert probes["upper"] == {"probe": "upper", "status": 403, "row": "read_only"}
        assert probes["mixed"] == {"probe": "mixed", "status": 403, "row": "read_only"}
        assert probes["control"]["status"] == 200
        assert (workspace / ".git" / "config").read_text() == "[core]\n"
        assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
