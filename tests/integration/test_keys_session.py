"""The keys door in a real session, as root: the launcher opens the secret's source and hands the fd over
without reading it; the secret is in the keys door's memory (the scan's control) and nowhere else the test
can look: not the launcher's memory, not the app's memory or environment, not the audit log or any file the
session wrote. The app cannot ask: the socket's group refuses its uid first, the edge check behind it.

The (role x secret x host) matrix, replay, expiry and a blob opened under another `info` run against the door
over real mutual TLS in tests/doors/keys/test_server.py: in a session, the net and model doors are the only
clients, and neither calls the keys door yet (their own issues).
"""

from __future__ import annotations

import errno
import grp
import json
import os
import pwd
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import trio

from doors._refusal import DoorRefused
from doors._transport import AsyncDoorClient, Dial, client_context_from_file
from doors.keys import machine_key_of, release
from pki.vocabulary import MACHINE_KEY_NAME, SEALED_ROOT
from tests.integration._session import (
    LAUNCHER,
    SESSIONS,
    basic_manifest,
    leftovers,
    let_the_app_go,
    manifest_hash,
    pids_with_uids,
    session_owner,
    session_uids,
    write_manifest,
)

pytestmark = pytest.mark.root
TRUST_DOMAIN = "test.sharness.test"

# Runs confined as the app: what it sees of the secret's path and the keys socket, then waits for the test.
APP = r"""
import errno, json, os, socket, sys, time
def report(name, **fields):
    print(json.dumps({"probe": name, **fields}), flush=True)
sid = os.environ["SHARNESS_SESSION"]
report("env", keys=sorted(os.environ))
try:
    open(SECRET_PATH, "rb").close()
    report("read_source", errno=0)
except OSError as exc:
    report("read_source", errno=errno.errorcode[exc.errno])
sock = socket.socket(socket.AF_UNIX)
try:
    sock.connect(f"/run/sharness/{sid}/doors/keys.sock")
    report("connect_keys", errno=0)
except OSError as exc:
    report("connect_keys", errno=errno.errorcode[exc.errno])
report("ready", sid=sid)
go = os.path.join(os.environ["TMPDIR"], "sharness-go")
deadline = time.monotonic() + 120
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def _memory(pid: int) -> Iterator[bytes]:
    """Every readable mapping of `pid`, read through /proc/<pid>/mem (as tests/pki/test_ca.py does)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or line.rstrip().endswith("[vvar]"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                yield mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue


def _holds(pid: int, value: bytes) -> bool:
    return any(value in region for region in _memory(pid))


def _probe_lines(stream: IO[str]) -> dict[str, dict[str, Any]]:
    probes: dict[str, dict[str, Any]] = {}
    while "ready" not in probes:
        line = stream.readline()
        assert line, "the launcher ended before the app was ready"
        if line.startswith('{"probe"'):
            found = json.loads(line)
            probes[found["probe"]] = found
    return probes


def _connect_as(user: str, path: str) -> str:
    """connect() to `path` from a child with `user`'s uid, gid and groups: the errno name, or "0"."""
    entry = pwd.getpwnam(user)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read)
            os.setgroups(os.getgrouplist(user, entry.pw_gid))
            os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
            os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)
            with socket.socket(socket.AF_UNIX) as sock:
                try:
                    sock.connect(path)
                    answer = "0"
                except OSError as exc:
                    answer = errno.errorcode[exc.errno or 0]
            os.write(write, answer.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    os.waitpid(child, 0)
    return answer


async def _ask_as_app(sid: str) -> DoorRefused:
    private = f"/run/sharness/{sid}/app"
    ctx = client_context_from_file(Path(f"{private}/bundle.pem").read_bytes(), f"{private}/svid.pem")
    dial = Dial("keys", f"/run/sharness/{sid}/doors/keys.sock", ctx, TRUST_DOMAIN, sid, "app")
    async with AsyncDoorClient(dial) as client:
        with pytest.raises(DoorRefused) as caught:
            await release(client, f"spiffe://{TRUST_DOMAIN}/session/{sid}/app", "anthropic", "api.anthropic.com")
    return caught.value


def _session_manifest(tmp_path: Path, source: Path, source_from: str | None = None) -> Path:
    """A session whose keys door keeps `anthropic` from `source` (or `source_from`, naming the file `source`)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, "-c", APP.replace("SECRET_PATH", repr(str(source)))])
    secrets = {"anthropic": {"from": source_from or str(source), "roles": ["net"], "hosts": ["api.anthropic.com"]}}
    document["doors"] = {"net": {"allow": {}}, "keys": {"secrets": secrets}}
    document["edges"] = [["net", "keys"]]
    return write_manifest(tmp_path, document)


def _secret_source(tmp_path: Path, value: bytes) -> Path:
    directory = tmp_path / "secrets"
    directory.mkdir(mode=0o700)
    source = directory / "anthropic.key"
    source.write_bytes(value + b"\n")
    source.chmod(0o600)
    return source


def _files_under(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from (path for path in root.rglob("*") if path.is_file() and not path.is_symlink())


@pytest.fixture
def sealed_name() -> Iterator[str]:
    """A name of the machine's sealed store for this test alone, removed after it; so are the store and its
    machine key when this test made them (a machine that had a key keeps it)."""
    store = Path(SEALED_ROOT)
    before = set(os.listdir(store)) if store.is_dir() else None
    name = f"test-{os.urandom(6).hex()}"
    yield name
    subprocess.run([*LAUNCHER, "secret", "rm", name], capture_output=True, check=False, timeout=60)
    if not store.is_dir():
        return
    now = set(os.listdir(store))
    if now - {MACHINE_KEY_NAME}:
        return  # other names are kept: the store is in use
    for entry in now - (before or set()):
        (store / entry).unlink()
    if before is None:
        store.rmdir()


def _sealed_source(name: str, value: bytes) -> tuple[Path, str]:
    added = subprocess.run([*LAUNCHER, "secret", "add", name, "--json"], input=value + b"\n", capture_output=True,
                           check=False, timeout=60)
    assert added.returncode == 0, added.stderr
    return Path(json.loads(added.stdout)["file"]), f"sealed:{name}"


@pytest.mark.parametrize("kind", ["plain file", "sealed at rest"])
def test_the_secret_is_in_the_keys_door_and_nowhere_else(tmp_path: Path, kind: str, sealed_name: str) -> None:
    value = b"sk-keys-test-" + os.urandom(16).hex().encode()
    if kind == "plain file":
        source, source_from = _secret_source(tmp_path, value), None
    else:
        source, source_from = _sealed_source(sealed_name, value)
        assert value not in source.read_bytes()
    manifest = _session_manifest(tmp_path, source, source_from)
    sealed_bytes = source.read_bytes()
    audit_dir = tmp_path / "audit"
    stderr = (tmp_path / "stderr").open("w+")
    launcher = subprocess.Popen(
        [*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir", str(audit_dir),
         "--json", "--best-effort"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        assert launcher.stdout is not None
        probes = _probe_lines(launcher.stdout)
        sid = probes["ready"]["sid"]
        (keys_pid,) = pids_with_uids({pwd.getpwnam(f"sh-{sid}-keys").pw_uid})
        # By uid, as seen from here: inside its own pid namespace the app's getpid() is not its pid here.
        app_pids = pids_with_uids({pwd.getpwnam(f"sh-{sid}-app").pw_uid})
        assert app_pids
        assert _holds(keys_pid, value)  # the control: the scan finds the secret where it is
        assert not _holds(launcher.pid, value)
        if source_from is not None:  # nor any of the machine key: only the keys door opened the seal
            key = machine_key_of(Path(source.parent, "machine.key").read_bytes())
            assert not _holds(launcher.pid, key.mlkem_seed) and not _holds(launcher.pid, key.x25519_private)
        for app_pid in app_pids:
            assert not _holds(app_pid, value)
            assert value not in Path(f"/proc/{app_pid}/environ").read_bytes()
        # The app's own view: the source is not in its private root, nor the keys socket.
        assert probes["read_source"]["errno"] in ("ENOENT", "EACCES")
        assert probes["connect_keys"]["errno"] in ("ENOENT", "EACCES")
        # Behind the private root, the socket's group refuses the app's uid and groups...
        socket_path = f"/run/sharness/{sid}/doors/keys.sock"
        assert f"sh-{sid}-to-keys" not in [g.gr_name for g in grp.getgrall() if f"sh-{sid}-app" in g.gr_mem]
        assert _connect_as(f"sh-{sid}-app", socket_path) == "EACCES"
        # ...and behind the group, the door's edge check refuses the app's SVID (root passes the group).
        refused = trio.run(_ask_as_app, sid)
        assert refused.refusal.row == "edges"
        let_the_app_go(sid, app_pids)
        out, _ = launcher.communicate(timeout=120)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    stderr.seek(0)
    errors = stderr.read()
    assert launcher.returncode == 0, errors
    summary = json.loads(out[out.index("{"):])
    assert leftovers(summary["sid"]) == {} and not session_uids(summary["sid"])
    assert value.decode() not in errors
    events = [json.loads(line) for line in Path(summary["audit_dir"], "audit.jsonl").read_text().splitlines()]
    refused = [e for e in events if e.get("kind") == "transport.refused" and e.get("role") == "keys"]
    assert [(e["stage"], e["client_role"]) for e in refused] == [("edge", "app")]  # the app's SVID, audited once
    for path in _files_under(audit_dir, tmp_path / "ws"):
        assert value not in path.read_bytes(), path
    assert source.read_bytes() == sealed_bytes  # the source is the person's: left as it was


@pytest.mark.parametrize(("what", "spoil"), [
    ("group-readable", lambda source: source.chmod(0o640)),
    ("not root's", lambda source: os.chown(source, 65534, 65534)),
    ("a symlink", lambda source: (source.rename(source.with_suffix(".real")), source.symlink_to(
        source.with_suffix(".real")))),
    ("missing", lambda source: source.unlink()),
])
def test_a_bad_source_stops_the_session_before_anything_is_created(tmp_path: Path, what: str, spoil: Any) -> None:
    source = _secret_source(tmp_path, b"sk-never-started")
    spoil(source)
    manifest = _session_manifest(tmp_path, source)
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                                 "--audit-dir", str(tmp_path / "audit"), "--best-effort"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 78, err
    # The row, as a JSON pointer (the path preflight, which runs first) or dotted (the source preflight)
    assert ("/doors/keys/secrets/anthropic/from" in err or "doors.keys.secrets.anthropic.from" in err), err
    assert "nothing was created" in err
    assert "sk-never-started" not in err + out
    assert not (tmp_path / "audit").exists() or not any((tmp_path / "audit").iterdir())
    # No journal of this launcher is left (other sessions on this machine may come and go meanwhile).
    assert not SESSIONS.is_dir() or all(session_owner(path) != launcher.pid for path in SESSIONS.iterdir())


def _run_refused(tmp_path: Path, manifest: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    run = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                          str(tmp_path / "audit"), "--best-effort", "--json"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120, check=False)
    summary = json.loads(run.stdout[run.stdout.index("{"):]) if "{" in run.stdout else None
    return run, summary


def test_a_sealed_file_changed_in_its_ciphertext_stops_the_session_at_the_keys_doors_start(
        tmp_path: Path, sealed_name: str) -> None:
    value = b"sk-sealed-" + os.urandom(16).hex().encode()
    source, source_from = _sealed_source(sealed_name, value)
    spoiled = bytearray(source.read_bytes())
    spoiled[-3] ^= 0x01  # the AEAD tag: nothing without the key can tell
    source.write_bytes(bytes(spoiled))
    run, summary = _run_refused(tmp_path, _session_manifest(tmp_path, source, source_from))
    assert run.returncode == 70, run.stderr  # a door failed at its start: fail closed, the app never ran
    assert f"doors.keys.secrets.anthropic.from: the sealed secret {sealed_name!r}" in run.stderr + run.stdout
    assert "changed since it was sealed" in run.stderr + run.stdout
    assert "SystemExit" not in run.stderr + run.stdout  # the reason, not the door process's exit mechanics
    assert summary is not None and leftovers(summary["sid"]) == {} and not session_uids(summary["sid"])
    assert value.decode() not in run.stderr + run.stdout


@pytest.mark.parametrize(("what", "spoil", "said"), [
    ("truncated", lambda data: data[:-1], "truncated"),
    ("renamed from another secret", lambda data: data.replace(b" name=test-", b" name=tost-", 1), "holds secret"),
    ("sealed to another key", lambda data: data.replace(b" key=", b" key=0", 1)[:data.index(b" key=") + 5]
     + b"0" * 32 + data[data.index(b" key=") + 37:], "sealed to machine key"),
])
def test_a_sealed_file_whose_header_does_not_match_stops_the_session_before_anything_is_created(
        tmp_path: Path, sealed_name: str, what: str, spoil: Any, said: str) -> None:
    value = b"sk-sealed-" + os.urandom(16).hex().encode()
    source, source_from = _sealed_source(sealed_name, value)
    source.write_bytes(spoil(source.read_bytes()))
    run, _ = _run_refused(tmp_path, _session_manifest(tmp_path, source, source_from))
    assert run.returncode == 78, run.stderr
    assert "doors.keys.secrets.anthropic.from" in run.stderr and said in run.stderr, run.stderr
    assert "secret add --replace" in run.stderr and "nothing was created" in run.stderr
    assert value.decode() not in run.stderr + run.stdout
    assert not (tmp_path / "audit").exists() or not any((tmp_path / "audit").iterdir())


def test_a_sealed_name_not_in_the_store_is_refused_with_the_command_that_seals_it(tmp_path: Path) -> None:
    missing = Path(f"/var/lib/sharness/secrets/test-absent-{os.urandom(4).hex()}.sealed")
    run, _ = _run_refused(tmp_path, _session_manifest(tmp_path, missing, f"sealed:{missing.stem}"))
    assert run.returncode == 78, run.stderr
    assert "/doors/keys/secrets/anthropic/from" in run.stderr and "secret add" in run.stderr


def test_a_sealed_store_another_component_may_read_is_refused_before_anything_is_created(
        tmp_path: Path, sealed_name: str) -> None:
    """The sealed file and the machine key are secret sources too: a read path above them refuses the session
    (were they only DAC-protected, a root 0700 directory bound into the app's root would be one chmod away)."""
    source, source_from = _sealed_source(sealed_name, b"sk-never-read")
    manifest_path = _session_manifest(tmp_path, source, source_from)
    document = json.loads(manifest_path.read_text())
    document["app"]["files"] = {"read": [str(source.parent)]}
    document["app"]["argv"] = [sys.executable, "-c", "pass"]  # were it started, it would end at once
    manifest_path.unlink()
    manifest = write_manifest(tmp_path, document)
    run, _ = _run_refused(tmp_path, manifest)
    assert run.returncode == 78, run.stderr
    assert "/doors/keys/secrets/anthropic/from" in run.stderr and "nothing was created" in run.stderr, run.stderr
