"""Mint a session in a short-lived child: the CA key and every leaf key live and die there.

The child generates the CA, issues one SVID per role, writes each role's key+leaf straight into that role's
memfd or 0400 file, sends back only public material over a pipe, and exits. The parent reaps it, checks
what it sent, and seals the memfds. The parent never has the CA key or a leaf key in its memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import fcntl
import json
import os
import select
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pki import egress, issue
from pki.bundle import bundle_pem, svid_pem
from pki.spiffe import SessionIdentity, validate_trust_domain
from pki.svid import check_svid

CHILD_TIMEOUT_S = 30.0
_MAX_REPLY = 1 << 20
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


class MintError(RuntimeError):
    """The CA child could not mint the session; the message says what to fix. It holds no secret."""


@dataclass(frozen=True)
class MemfdDelivery:
    """Write the role's key+leaf into this (empty, sealable) memfd; the spawner hands it to the door."""

    fd: int


@dataclass(frozen=True)
class FileDelivery:
    """Create this file (O_EXCL, O_NOFOLLOW, 0400, owned by uid:gid) holding the role's key+leaf."""

    path: str
    uid: int
    gid: int


Delivery = MemfdDelivery | FileDelivery


@dataclass(frozen=True)
class EgressDelivery:
    """Mint the egress CA for `hosts` too, and write each host's key+leaf into this (empty, sealable) memfd."""

    hosts: tuple[str, ...]
    fd: int


@dataclass(frozen=True)
class MintedSession:
    """Public material only: the trust bundle, each role's leaf certificate, the CA's expiry, and the egress CA
    (when hosts have a bound credential)."""

    bundle_pem: bytes
    leaf_pems: dict[str, bytes]
    not_after: int
    egress_ca_pem: bytes | None = None


def new_svid_memfd(role: str) -> int:
    """An empty sealable memfd (close-on-exec; the spawner dup2s it to fd 4) for `role`'s SVID."""
    return os.memfd_create(f"sh-svid-{role}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _check_deliveries(roles: tuple[str, ...], deliveries: Mapping[str, Delivery]) -> None:
    if set(roles) != set(deliveries) or len(set(roles)) != len(roles):
        raise MintError(f"deliveries name {sorted(deliveries)}, roles are {sorted(roles)}: give one per role")
    for role, delivery in deliveries.items():
        if isinstance(delivery, MemfdDelivery):
            _check_memfd(role, delivery.fd)
        elif not isinstance(delivery, FileDelivery):
            raise MintError(f"{role}: delivery {delivery!r} is neither MemfdDelivery nor FileDelivery")


def _check_memfd(what: str, fd: int) -> None:
    try:
        size = os.fstat(fd).st_size
    except OSError as exc:
        raise MintError(f"{what}: SVID memfd {fd} is not open ({exc.strerror})") from exc
    if size != 0:
        raise MintError(f"{what}: SVID memfd {fd} is not empty")
    if not os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:"):
        raise MintError(f"{what}: fd {fd} is not a memfd: create it with new_svid_memfd")


def _seal(fd: int) -> None:
    """Seal a memfd made with MFD_ALLOW_SEALING (new_svid_memfd); leave one made without it as it is."""
    if not fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SEAL:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)


def mint_session(
    trust_domain: str, session_id: str, roles: Iterable[str], ttl_s: int, deliveries: Mapping[str, Delivery],
    egress_to: EgressDelivery | None = None, while_minting: Callable[[], None] | None = None,
) -> MintedSession:
    """Fork the CA child, let it write every role's SVID to its delivery (and the egress leaves to `egress_to`),
    return the public material. `while_minting` is the caller's own work, run once the child is forked and before
    its reply is read: the two run side by side."""
    roles = tuple(roles)
    validate_trust_domain(trust_domain)
    for role in roles:
        SessionIdentity(trust_domain, session_id, role)
    _check_deliveries(roles, deliveries)
    if egress_to is not None:
        egress.check_hosts(egress_to.hosts)
        _check_memfd("egress", egress_to.fd)
    if ttl_s <= 0:
        raise MintError(f"ttl_s must be positive, got {ttl_s}")
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which leaves through os._exit
        os.close(read_end)
        _child_main(write_end, parent, trust_domain, session_id, roles, ttl_s, deliveries, egress_to)
    os.close(write_end)
    try:
        if while_minting is not None:
            while_minting()
        reply = _read_reply(read_end, pid)
    finally:
        os.close(read_end)
        code = _reap(pid)
    undo = [*deliveries.values(), *((MemfdDelivery(egress_to.fd),) if egress_to is not None else ())]
    try:
        minted = _accept(reply, code, pid, trust_domain, session_id, roles)
        minted = _accept_egress(minted, reply, egress_to)
    except MintError:
        if code == 0:  # the child delivered, but what it sent back is wrong: deliver nothing
            for delivery in undo:
                _undo(delivery)
        raise
    for delivery in undo:
        if isinstance(delivery, MemfdDelivery):
            _seal(delivery.fd)
    return minted


def _read_reply(read_end: int, pid: int) -> bytes:
    """Read the child's reply to EOF within CHILD_TIMEOUT_S; kill the child if it hangs."""
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    poller = select.poll()
    poller.register(read_end, select.POLLIN | select.POLLHUP)
    chunks: list[bytes] = []
    size = 0
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0 or not poller.poll(left_ms):
            os.kill(pid, signal.SIGKILL)
            raise MintError(f"CA child {pid} did not answer within {CHILD_TIMEOUT_S:.0f} s: killed")
        chunk = os.read(read_end, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _MAX_REPLY:
            os.kill(pid, signal.SIGKILL)
            raise MintError(f"CA child {pid} sent more than {_MAX_REPLY} bytes: killed")
        chunks.append(chunk)


def _reap(pid: int) -> int:
    """Wait for the child; return its exit code (negative: killed by that signal)."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _accept(
    reply: bytes, code: int, pid: int, trust_domain: str, session_id: str, roles: tuple[str, ...]
) -> MintedSession:
    """Parse the child's reply and check every leaf against the CA and its role before trusting it."""
    try:
        raw = json.loads(reply) if reply else {}
    except ValueError as exc:
        raise MintError(f"CA child {pid} sent a reply that is not JSON") from exc
    if "error" in raw:
        raise MintError(f"CA child refused: {raw['error']}")
    if code != 0 or not raw:
        raise MintError(f"CA child {pid} exited with status {code}")
    bundle = raw["bundle_pem"].encode("ascii")
    ca_cert = x509.load_pem_x509_certificate(bundle)
    leaf_pems = {role: pem.encode("ascii") for role, pem in raw["leaf_pems"].items()}
    if set(leaf_pems) != set(roles):
        raise MintError(f"CA child returned leaves for {sorted(leaf_pems)}, expected {sorted(roles)}")
    now = dt.datetime.now(dt.UTC)
    for role, pem in leaf_pems.items():
        verdict = check_svid(
            x509.load_pem_x509_certificate(pem),
            trust_domain=trust_domain,
            session_id=session_id,
            now=now,
            expected_role=role,
            ca_cert=ca_cert,
        )
        if not verdict.ok:
            raise MintError(f"CA child issued a bad leaf for {role}: {verdict.reason}")
    return MintedSession(bundle, leaf_pems, int(raw["not_after"]))


def _accept_egress(minted: MintedSession, reply: bytes, egress_to: EgressDelivery | None) -> MintedSession:
    """The egress CA from the reply, each host's leaf verified against it (NameConstraints included)."""
    if egress_to is None:
        return minted
    raw = json.loads(reply)
    if "egress_ca_pem" not in raw or sorted(raw.get("egress_leaf_pems", {})) != sorted(egress_to.hosts):
        raise MintError(f"CA child returned no egress CA or leaves for other hosts than {sorted(egress_to.hosts)}")
    ca_pem = raw["egress_ca_pem"].encode("ascii")
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    now = dt.datetime.now(dt.UTC)
    for host, pem in raw["egress_leaf_pems"].items():
        try:
            egress.verify_host_leaf(ca_cert, x509.load_pem_x509_certificate(pem.encode("ascii")), host, now)
        except egress.EgressError as exc:
            raise MintError(f"CA child issued a bad egress leaf: {exc}") from exc
    return MintedSession(minted.bundle_pem, minted.leaf_pems, minted.not_after, ca_pem)


def _child_main(
    write_end: int,
    parent: int,
    trust_domain: str,
    session_id: str,
    roles: tuple[str, ...],
    ttl_s: int,
    deliveries: Mapping[str, Delivery],
    egress_to: EgressDelivery | None = None,
) -> None:  # pragma: no cover - measured by tests/pki/test_ca.py through the parent
    """The CA child: never returns. Not dumpable, dies with the parent, exits 0 only on full success."""
    code = 1
    try:
        _harden(parent)
        reply = _mint_and_deliver(trust_domain, session_id, roles, ttl_s, deliveries)
        if egress_to is not None:
            reply.update(_mint_egress(egress_to, ttl_s))
        code = 0
    except BaseException as exc:  # the child must reach os._exit whatever happens
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        data = json.dumps(reply).encode()
        while data:
            data = data[os.write(write_end, data) :]
    finally:
        os._exit(code)


def _harden(parent: int) -> None:
    """Keep same-uid processes from ptrace or /proc/<pid>/mem, and die if the launcher dies."""
    with contextlib.suppress(ValueError):  # ValueError: not the main thread, so no wakeup fd to clear
        signal.set_wakeup_fd(-1)  # the parent's event loop wakeup fd is not ours to write
    # ctypes, not a cffi cdef: parsing even one declaration imports pycparser, ~13 ms of every launcher start
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0), ctypes.c_ulong(0),
               ctypes.c_ulong(0))
    if os.getppid() != parent:
        raise MintError("launcher died before the CA child started")


def _mint_and_deliver(
    trust_domain: str, session_id: str, roles: tuple[str, ...], ttl_s: int, deliveries: Mapping[str, Delivery]
) -> dict[str, object]:
    """Generate the CA, issue and deliver each leaf; on failure undo every delivery already made."""
    now = dt.datetime.now(dt.UTC)
    ca_key, ca_cert = issue.new_ca(trust_domain, ttl_s, now)
    leaf_pems: dict[str, str] = {}
    done: list[Delivery] = []
    try:
        for role in roles:
            identity = SessionIdentity(trust_domain, session_id, role)
            leaf_key, leaf_cert = issue.issue_leaf(ca_key, ca_cert, identity, now, ttl_s)
            _deliver(deliveries[role], svid_pem(leaf_key, leaf_cert))
            done.append(deliveries[role])
            leaf_pems[role] = leaf_cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
    except BaseException:
        for delivery in done:
            _undo(delivery)
        raise
    return {
        "bundle_pem": bundle_pem(ca_cert).decode("ascii"),
        "leaf_pems": leaf_pems,
        "not_after": int(ca_cert.not_valid_after_utc.timestamp()),
    }


def _mint_egress(egress_to: EgressDelivery, ttl_s: int) -> dict[str, object]:
    """The egress CA and one leaf per bound host, the leaves' keys written into the net door's memfd only."""
    now = dt.datetime.now(dt.UTC)
    ca_key, ca_cert = egress.new_egress_ca(egress_to.hosts, ttl_s, now)
    leaves = {host: egress.issue_host_leaf(ca_key, ca_cert, host, now, ttl_s) for host in egress_to.hosts}
    _write_all(egress_to.fd, egress.leaves_pem(leaves))
    return {"egress_ca_pem": bundle_pem(ca_cert).decode("ascii"),
            "egress_leaf_pems": {host: cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
                                 for host, (_, cert) in leaves.items()}}


def _deliver(delivery: Delivery, pem: bytes) -> None:
    if isinstance(delivery, MemfdDelivery):
        _write_all(delivery.fd, pem)
        return
    directory, name = os.path.split(delivery.path)
    dir_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o400, dir_fd=dir_fd)
        try:
            os.fchown(fd, delivery.uid, delivery.gid)
            os.fchmod(fd, 0o400)
            _write_all(fd, pem)
            os.fsync(fd)
        except BaseException:
            os.unlink(name, dir_fd=dir_fd)
            raise
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)


def _write_all(fd: int, data: bytes) -> None:
    offset = 0
    while offset < len(data):
        offset += os.pwrite(fd, data[offset:], offset)


def _undo(delivery: Delivery) -> None:
    if isinstance(delivery, MemfdDelivery):
        os.ftruncate(delivery.fd, 0)
    else:
        os.unlink(delivery.path)
