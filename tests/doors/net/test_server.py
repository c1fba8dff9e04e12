"""The net door as a process: contract rows, proxy listeners by fd, the system resolver, audit on the status fd."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from doors._contract import CONTRACT_ENV, DoorContract
from doors._status import StatusSender
from doors._transport.testing import scratch_dir
from doors.net._policy import AllowlistError
from doors.net.server import config_from_rows, serve_net
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES, MAX_STATUS_BYTES

from .client import connect, https_get
from .conftest import TEST_INTERNET, WAN_V4, Names, TestNet, listen_in

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ALLOW = {"app": ["ok.sharness.test:443", "private.sharness.test:443", "nx.sharness.test:443"]}


def test_config_from_rows() -> None:
    own = frozenset({(ipaddress.ip_address("127.0.0.1"), 3128)})
    config = config_from_rows({"allow": ALLOW, "max_tunnels": 3, "idle_timeout_s": 60}, own)
    assert config.max_tunnels == 3 and config.idle_timeout_s == 60 and config.connect_timeout_s == 10.0
    assert config.addresses.own_listeners == own and config.addresses.test_internet == ()
    assert [r.text for r in config.allowlist.rules["app"]] == ALLOW["app"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"allow": ["pypi.org:443"]}, "doors.net.allow must map"),
        ({"allow": {}, "max_tunnels": 0}, "doors.net.max_tunnels"),
        ({"allow": {}, "idle_timeout_s": True}, "doors.net.idle_timeout_s"),
        ({"allow": {}, "connect_timeout_s": 1.5}, "doors.net.connect_timeout_s"),
    ],
)
def test_bad_rows(rows: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config_from_rows(rows, frozenset())


def test_bad_allow_entry_names_its_row() -> None:
    with pytest.raises(AllowlistError, match=r"doors.net.allow.shell\[1\]"):
        config_from_rows({"allow": {"shell": ["pypi.org:443", "127.1:80"]}}, frozenset())


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("sharness-test-net-svid", 0)
    os.write(fd, data)
    return fd


def _contract(pki: SessionPKI, door_fd: int, proxy_fd: int, status_fd: int, svid_fd: int) -> DoorContract:
    return DoorContract(role="net", session_id=pki.session_id, trust_domain=pki.trust_domain,
                        edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(),
                        rows={"allow": ALLOW}, listen_fds={"door": door_fd, "proxy.app": proxy_fd},
                        status_fd=status_fd, svid_fd=svid_fd)


@pytest.fixture
def resolv_conf(namespaces: Names) -> Iterator[str]:
    """/etc/netns/<door ns>/resolv.conf: what `ip netns exec` shows the door as /etc/resolv.conf."""
    made_parent = not os.path.isdir("/etc/netns")
    directory = f"/etc/netns/{namespaces.door}"
    os.makedirs(directory)
    try:
        with open(f"{directory}/resolv.conf", "w") as out:
            out.write(f"nameserver {WAN_V4}\noptions timeout:1 attempts:1\n")
        yield directory
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{directory}/resolv.conf")
        os.rmdir(directory)
        if made_parent:
            with contextlib.suppress(OSError):  # another test's directory may be in it now
                os.rmdir("/etc/netns")


async def _messages(status: trio.socket.SocketType, count: int) -> list[dict[str, Any]]:
    out = []
    while len(out) < count:
        out.append(json.loads(await status.recv(MAX_STATUS_BYTES)))
    return out


@pytest.mark.root
async def test_door_process_with_the_system_resolver(net: TestNet, resolv_conf: str) -> None:
    pki = SessionPKI.create()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = trio.socket.from_stdlib_socket(ours)
    with scratch_dir() as directory:
        door = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        door.bind(os.path.join(directory, "net.sock"))
        door.listen(8)
        proxy = listen_in(net.names.app, "127.0.0.1", 3140)
        memfd = _memfd(pki.svid_pem("net"))
        fds = (door.detach(), proxy.detach(), theirs.detach(), memfd)
        contract = _contract(pki, *fds)
        env = {CONTRACT_ENV: contract.to_json(), "PATH": "/usr/sbin:/usr/bin:/bin"}
        process = await trio.lowlevel.open_process(
            ["ip", "netns", "exec", net.names.door, sys.executable, "-m", "doors"], env=env, cwd=ROOT,
            pass_fds=fds)
        for fd in fds:
            os.close(fd)
        try:
            assert (await _messages(status, 1)) == [{"type": "ready"}]
            verdicts = []
            for authority in ("private.sharness.test:443", "ok.sharness.test:443", "nx.sharness.test:443"):
                stream = await net.client(3140)
                verdicts.append((await connect(stream, authority)).refusal)
                await stream.aclose()
            assert verdicts == ["private; row=doors.net.public_addresses",
                                "documentation; row=doors.net.public_addresses",  # no test internet here
                                "resolution-failed; row=doors.net.upstream"]
            audit = await _messages(status, 6)
            assert [m["type"] for m in audit] == ["audit"] * 6
            # Each was allowlisted: net.open was queued before the door resolved, net.request says how it ended.
            assert [m["event"]["kind"] for m in audit] == ["net.open", "net.request"] * 3
            assert [m["event"]["answers"] for m in audit[1::2]] == [["10.77.0.2"], [WAN_V4], []]
        finally:
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0


@pytest.mark.root
async def test_serve_net_allows_through_the_whole_door(net: TestNet) -> None:
    pki = SessionPKI.create()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = trio.socket.from_stdlib_socket(ours)
    with scratch_dir() as directory:
        door = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        door.bind(os.path.join(directory, "net.sock"))
        door.listen(8)
        proxy = listen_in(net.names.app, "127.0.0.1", 3141)
        contract = _contract(pki, door.detach(), proxy.detach(), theirs.detach(), _memfd(pki.svid_pem("net")))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_net, contract, StatusSender(contract.status_fd), net.resolver, TEST_INTERNET)
            assert (await _messages(status, 1)) == [{"type": "ready"}]
            stream = await net.client(3141)
            assert (await connect(stream, "ok.sharness.test:443")).status == 200
            assert (await https_get(stream, net.tls_context(), "ok.sharness.test")).status == 200
            await stream.aclose()
            opened, message = await _messages(status, 2)
            assert opened["event"] == {"door": "net", "kind": "net.open", "client_role": "app", "method": "CONNECT",
                                       "requested": "ok.sharness.test:443", "host": "ok.sharness.test", "port": 443,
                                       "row": "doors.net.allow.app[0]"}
            assert message["event"]["decision"] == "allow" and message["event"]["address"] == WAN_V4
            nursery.cancel_scope.cancel()
