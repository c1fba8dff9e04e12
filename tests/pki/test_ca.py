"""The CA child: it mints and delivers every SVID, and the parent never holds a private key."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pki import ca, egress, issue
from pki.bundle import load_bundle_into_context, load_into_context
from pki.svid import check_svid
from pki.vocabulary import ROLES

TD = "test.sharness.test"
SID = "0123abcd"
PROBE = Path(__file__).with_name("_mint_probe.py")


@pytest.fixture
def memfds() -> Iterator[dict[str, int]]:
    fds = {role: ca.new_svid_memfd(role) for role in ROLES}
    try:
        yield fds
    finally:
        for fd in fds.values():
            os.close(fd)


def _read_fd(fd: int) -> bytes:
    return os.pread(fd, 1 << 16, 0)


def _children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found |= {int(c) for c in f.read().split()}
    return found


def test_mint_delivers_to_memfds_and_file(memfds: dict[str, int], tmp_path: Path) -> None:
    deliveries: dict[str, ca.Delivery] = {role: ca.MemfdDelivery(fd) for role, fd in memfds.items()}
    app_file = tmp_path / "app.svid.pem"
    deliveries["app"] = ca.FileDelivery(str(app_file), os.getuid(), os.getgid())
    before = time.time()
    minted = ca.mint_session(TD, SID, ROLES, 600, deliveries)
    assert before + 590 <= minted.not_after <= time.time() + 600
    ca_cert = x509.load_pem_x509_certificate(minted.bundle_pem)
    for role in ROLES:
        svid = app_file.read_bytes() if role == "app" else _read_fd(memfds[role])
        assert svid.startswith(b"-----BEGIN PRIVATE KEY-----")
        key = serialization.load_pem_private_key(svid, None)
        (cert,) = x509.load_pem_x509_certificates(svid)
        assert cert.public_bytes(serialization.Encoding.PEM) == minted.leaf_pems[role]
        assert key.public_key() == cert.public_key()
        verdict = check_svid(
            cert, trust_domain=TD, session_id=SID, now=dt.datetime.now(dt.UTC), expected_role=role, ca_cert=ca_cert
        )
        assert verdict.ok, verdict.reason
    st = app_file.stat()
    assert stat.S_IMODE(st.st_mode) == 0o400
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    assert _children_of(os.getpid()) == set()


def test_memfds_are_sealed_after_mint(memfds: dict[str, int]) -> None:
    deliveries = {role: ca.MemfdDelivery(fd) for role, fd in memfds.items()}
    ca.mint_session(TD, SID, ROLES, 600, deliveries)
    seals = fcntl.fcntl(memfds["fs"], fcntl.F_GET_SEALS)
    assert seals & fcntl.F_SEAL_WRITE and seals & fcntl.F_SEAL_SEAL
    with pytest.raises(PermissionError):
        os.write(memfds["fs"], b"x")
    assert os.get_inheritable(memfds["fs"]) is False


def test_minted_memfds_complete_a_mutual_tls13_handshake(memfds: dict[str, int]) -> None:
    minted = ca.mint_session(TD, SID, ROLES, 600, {r: ca.MemfdDelivery(fd) for r, fd in memfds.items()})
    contexts = []
    for side, role in ((ssl.PROTOCOL_TLS_SERVER, "keys"), (ssl.PROTOCOL_TLS_CLIENT, "net")):
        ctx = ssl.SSLContext(side)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_REQUIRED
        load_bundle_into_context(ctx, minted.bundle_pem)
        load_into_context(ctx, memfds[role])
        contexts.append(ctx)
    left, right = socket.socketpair()
    seen: dict[str, bytes | None] = {}

    def serve() -> None:
        with contexts[0].wrap_socket(left, server_side=True) as tls:
            seen["server"] = tls.getpeercert(binary_form=True)
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve)
    thread.start()
    with contexts[1].wrap_socket(right) as tls:
        assert tls.version() == "TLSv1.3"
        assert tls.recv(2) == b"ok"
        seen["client"] = tls.getpeercert(binary_form=True)
    thread.join()
    for end, role in (("server", "net"), ("client", "keys")):
        der = seen[end]
        assert der is not None
        assert x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM) == minted.leaf_pems[role]


def test_refuses_mismatched_deliveries(memfds: dict[str, int]) -> None:
    with pytest.raises(ca.MintError, match="give one per role"):
        ca.mint_session(TD, SID, ("fs", "net"), 600, {"fs": ca.MemfdDelivery(memfds["fs"])})


def test_refuses_non_empty_memfd(memfds: dict[str, int]) -> None:
    os.write(memfds["fs"], b"old")
    with pytest.raises(ca.MintError, match="is not empty"):
        ca.mint_session(TD, SID, ("fs",), 600, {"fs": ca.MemfdDelivery(memfds["fs"])})


def test_refuses_closed_memfd() -> None:
    fd = ca.new_svid_memfd("fs")
    os.close(fd)
    with pytest.raises(ca.MintError, match="is not open"):
        ca.mint_session(TD, SID, ("fs",), 600, {"fs": ca.MemfdDelivery(fd)})


def test_refuses_bad_inputs(memfds: dict[str, int]) -> None:
    one = {"fs": ca.MemfdDelivery(memfds["fs"])}
    with pytest.raises(ca.MintError, match="ttl_s must be positive"):
        ca.mint_session(TD, SID, ("fs",), 0, one)
    with pytest.raises(ValueError, match="session id"):
        ca.mint_session(TD, "nothex!!", ("fs",), 60, one)


def test_failure_undoes_every_delivery(memfds: dict[str, int], tmp_path: Path) -> None:
    taken = tmp_path / "app.svid.pem"
    taken.write_bytes(b"already here")
    deliveries: dict[str, ca.Delivery] = {"fs": ca.MemfdDelivery(memfds["fs"])}
    deliveries["app"] = ca.FileDelivery(str(taken), os.getuid(), os.getgid())
    with pytest.raises(ca.MintError, match="CA child refused: FileExistsError"):
        ca.mint_session(TD, SID, ("fs", "app"), 600, deliveries)
    assert _read_fd(memfds["fs"]) == b""
    assert taken.read_bytes() == b"already here"
    assert _children_of(os.getpid()) == set()


def test_file_is_not_followed_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "sh-target"
    (tmp_path / "app.svid.pem").symlink_to(target)
    delivery = ca.FileDelivery(str(tmp_path / "app.svid.pem"), os.getuid(), os.getgid())
    with pytest.raises(ca.MintError, match="FileExistsError"):
        ca.mint_session(TD, SID, ("app",), 600, {"app": delivery})
    assert not target.exists()


def test_child_exit_status_is_checked(memfds: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(issue, "new_ca", lambda *a, **k: os._exit(3))
    with pytest.raises(ca.MintError, match="exited with status 3"):
        ca.mint_session(TD, SID, ("fs",), 600, {"fs": ca.MemfdDelivery(memfds["fs"])})
    assert _children_of(os.getpid()) == set()


def test_hung_child_is_killed_and_reaped(memfds: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ca, "CHILD_TIMEOUT_S", 0.2)
    monkeypatch.setattr(issue, "new_ca", lambda *a, **k: time.sleep(3600))
    with pytest.raises(ca.MintError, match="did not answer"):
        ca.mint_session(TD, SID, ("fs",), 600, {"fs": ca.MemfdDelivery(memfds["fs"])})
    assert _children_of(os.getpid()) == set()


# --- the proof: no private key in the parent, in its files or in a pipe, and the child is gone ---


def _memory(pid: int) -> Iterator[bytes]:
    """Every readable mapping of `pid`, read through /proc/<pid>/mem."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if not fields[1].startswith("r") or (len(fields) > 5 and fields[5] == "[vvar]"):
                continue
            try:
                mem.seek(start)
                yield mem.read(end - start)
            except OSError:
                continue


def _needles(scalar: int) -> list[bytes]:
    big = scalar.to_bytes(32, "big")
    return [big, big[::-1]]


def _scalar(svid: bytes) -> int:
    key = serialization.load_pem_private_key(svid, None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key.private_numbers().private_value


def _unread_in_pipes(pid: int) -> dict[int, int]:
    """fd -> bytes waiting, for every pipe `pid` holds."""
    waiting: dict[int, int] = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("pipe:"):
            continue
        fd = os.open(f"/proc/{pid}/fd/{name}", os.O_RDONLY | os.O_NONBLOCK)
        try:
            waiting[int(name)] = int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4), sys.byteorder)
        finally:
            os.close(fd)
    return waiting


@contextlib.contextmanager
def _run_probe(tmp_path: Path, *extra: str) -> Iterator[tuple[int, dict, dict]]:
    """Start P, wait for its report; yield (pid, report, what the CA child's spy wrote); kill P after."""
    (tmp_path / "out").mkdir()
    spy_file = tmp_path / "ca-scalar.json"
    proc = subprocess.Popen(
        [sys.executable, str(PROBE), str(spy_file), str(tmp_path / "out"), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        report = json.loads(proc.stdout.readline())
        yield proc.pid, report, {**json.loads(spy_file.read_text()), "path": str(spy_file)}
    finally:
        proc.kill()
        proc.wait()


def _keys_found(pid: int, report: dict, spy: dict) -> set[str]:
    """Which private keys (CA, leaf of each role) appear in P's memory; asserts the search sees P's canary."""
    memfd_svids = {role: Path(f"/proc/{pid}/fd/{fd}").read_bytes() for role, fd in report["memfds"].items()}
    app_svid = Path(report["app_file"]).read_bytes()
    needles = {"CA": _needles(int(spy["scalar"], 16)), "app": _needles(_scalar(app_svid))}
    needles |= {role: _needles(_scalar(svid)) for role, svid in memfd_svids.items()}
    egress_spy = json.loads(Path(f"{spy['path']}.egress").read_text())
    egress_leaves = egress.split_leaves(Path(f"/proc/{pid}/fd/{report['egress_memfd']}").read_bytes())
    needles |= {"egress CA": _needles(int(egress_spy["scalar"], 16))}
    needles |= {f"egress {host}": _needles(_scalar(pem)) for host, pem in egress_leaves.items()}
    assert sorted(needles) == sorted(["CA", *ROLES, "egress CA", "egress git.sharness.test"])
    canary = bytes.fromhex(report["canary"])
    found: set[str] = set()
    canary_seen = False
    for region in _memory(pid):
        canary_seen = canary_seen or canary in region
        found |= {name for name, pair in needles.items() if any(n in region for n in pair)}
    assert canary_seen, "the memory search cannot see what P holds: the proof would prove nothing"
    return found


def test_the_search_catches_a_parent_that_loads_keys(tmp_path: Path) -> None:
    with _run_probe(tmp_path, "leak") as (pid, report, spy):
        assert _keys_found(pid, report, spy) >= {"CA", "fs"}


def test_parent_never_holds_a_private_key(tmp_path: Path) -> None:
    with _run_probe(tmp_path) as (pid, report, spy):
        assert _keys_found(pid, report, spy) == set(), "private key material in the parent's memory"
        written = sorted((tmp_path / "out").iterdir())
        assert written == [Path(report["app_file"])]
        ca_needles = _needles(int(spy["scalar"], 16))
        files = {f"memfd of {r}": Path(f"/proc/{pid}/fd/{fd}").read_bytes() for r, fd in report["memfds"].items()}
        files |= {str(p): p.read_bytes() for p in written}
        for where, content in files.items():
            key_der = serialization.load_pem_private_key(content, None).private_bytes(
                serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            assert not any(n in blob for n in ca_needles for blob in (content, key_der)), f"CA key in {where}"
        assert _unread_in_pipes(pid) == {0: 0, 1: 0}, "a pipe besides stdin/stdout, or unread data"
        assert not os.path.exists(f"/proc/{spy['pid']}") or spy["pid"] not in _children_of(pid)
        assert _children_of(pid) == set()


def test_refuses_an_fd_that_is_not_a_memfd(tmp_path: Path) -> None:
    regular = os.open(tmp_path / "sh-regular", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with pytest.raises(ca.MintError, match="is not a memfd"):
            ca.mint_session(TD, SID, ("fs",), 600, {"fs": ca.MemfdDelivery(regular)})
    finally:
        os.close(regular)


def test_a_memfd_without_sealing_is_delivered_unsealed() -> None:
    plain = os.memfd_create("sh-test-plain", os.MFD_CLOEXEC)
    try:
        minted = ca.mint_session(TD, SID, ("fs",), 600, {"fs": ca.MemfdDelivery(plain)})
        assert minted.leaf_pems["fs"] in _read_fd(plain)
        assert fcntl.fcntl(plain, fcntl.F_GET_SEALS) == fcntl.F_SEAL_SEAL  # the kernel's mark: not sealable
    finally:
        os.close(plain)


def test_a_bad_reply_undoes_the_deliveries(
    memfds: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child issues the fs leaf for the shell role: the parent's check must refuse it and undo it all.
    real_issue_leaf = issue.issue_leaf

    def swapped(ca_key, ca_cert, identity, now, ttl_s):
        return real_issue_leaf(ca_key, ca_cert, dataclasses.replace(identity, role="fs"), now, ttl_s)

    monkeypatch.setattr(issue, "issue_leaf", swapped)
    app_file = tmp_path / "app.svid.pem"
    deliveries: dict[str, ca.Delivery] = {"shell": ca.MemfdDelivery(memfds["shell"])}
    deliveries["app"] = ca.FileDelivery(str(app_file), os.getuid(), os.getgid())
    with pytest.raises(ca.MintError, match=r"bad leaf for (app|shell): peer SVID refused: role 'fs'"):
        ca.mint_session(TD, SID, ("shell", "app"), 600, deliveries)
    assert _read_fd(memfds["shell"]) == b""
    assert not app_file.exists()


def test_the_callers_work_runs_beside_the_ca_child_and_a_failure_there_leaves_no_child(
    memfds: dict[str, int],
) -> None:
    """`while_minting` runs once the child is forked (so the two overlap) and before its reply is read; when it
    raises, the child is still reaped and nothing is returned."""
    before = _children_of(os.getpid())
    seen: list[set[int]] = []
    deliveries = {role: ca.MemfdDelivery(fd) for role, fd in memfds.items()}
    minted = ca.mint_session(TD, SID, ROLES, 600, deliveries, None, lambda: seen.append(_children_of(os.getpid())))
    assert len(seen) == 1 and len(seen[0] - before) == 1  # the CA child existed while the callback ran
    assert minted.bundle_pem and _children_of(os.getpid()) == before

    def fails() -> None:
        raise RuntimeError("the launcher's own work failed")

    fresh = {role: ca.MemfdDelivery(ca.new_svid_memfd(role)) for role in ROLES}
    try:
        with pytest.raises(RuntimeError, match="own work failed"):
            ca.mint_session(TD, SID, ROLES, 600, fresh, None, fails)
        assert _children_of(os.getpid()) == before
    finally:
        for delivery in fresh.values():
            os.close(delivery.fd)
