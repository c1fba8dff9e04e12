"""The proxy over mutual TLS: a door on an edge to net gets the same decisions as on a proxy listener,
for the role its SVID names (`doors.net.allow.<that role>`)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from doors._contract import DoorContract
from doors._http import Router
from doors._status import StatusSender
from doors._transport import TlsStream, connect
from doors._transport.testing import Session, scratch_dir, session
from doors.net.proxy import Proxy
from doors.net.server import proxy_routes, serve_net
from pki.testing import SessionPKI
from pki.vocabulary import DEFAULT_EDGES

from . import hellos
from .client import connect as proxy_connect
from .client import http, https_get, read_reply
from .conftest import TEST_INTERNET, WAN_V4, TestNet
from .test_proxy_connect import wait_for_audit

pytestmark = pytest.mark.root

# keys gets an edge to net but no allow row; model has no edge to net at all.
EDGES = DEFAULT_EDGES | {("keys", "net")}


@dataclass
class MtlsDoor:
    """The net door's mTLS listener serving the test network's proxy."""

    s: Session
    address: str

    async def client(self, role: str) -> TlsStream:
        return await connect(self.s.dial("net", self.address, self.s.client_ctx(role), role))


async def _start(net: TestNet, s: Session, proxy: Proxy, name: str = "net") -> MtlsDoor:
    address = await s.start_door(net.nursery, "net", router=Router("net", proxy_routes(proxy)), name=name)
    assert isinstance(address, str)
    return MtlsDoor(s, address)


@pytest.fixture
async def door(net: TestNet) -> AsyncIterator[MtlsDoor]:
    async with session(EDGES) as s:
        assert net.proxy is not None
        yield await _start(net, s, net.proxy)


async def test_allowed_connect_over_mtls_reaches_the_host(net: TestNet, door: MtlsDoor) -> None:
    stream = await door.client("shell")
    assert (await proxy_connect(stream, "ok.sharness.test:443")).status == 200
    page = await https_get(stream, net.tls_context(), "ok.sharness.test", "/hello")
    assert page.status == 200 and page.json()["target"] == "/hello"
    await stream.aclose()
    await wait_for_audit(net, 1)
    [event] = net.audit
    assert event["decision"] == "allow" and event["client_role"] == "shell" and event["address"] == WAN_V4
    assert event["row"] == "doors.net.allow.shell[0]" and event["bytes_up"] > 0 and event["bytes_down"] > 0
    assert not [e for e in door.s.events if e.get("kind") == "http.request"]  # one audit event: the proxy's


@pytest.mark.parametrize(
    ("role", "authority", "status", "refusal"),
    [
        ("shell", "plain.sharness.test:80", 403, "not-allowlisted; row=doors.net.allow"),
        ("shell", "3329754114:443", 403, "non-canonical-number; row=doors.net.allow"),
        ("app", "private.sharness.test:443", 403, "private; row=doors.net.public_addresses"),
        ("app", "mixed.sharness.test:443", 403, "mixed-answers-private; row=doors.net.public_addresses"),
        ("app", "nx.sharness.test:443", 502, "resolution-failed; row=doors.net.upstream"),
        ("app", "blackhole.sharness.test:443", 504, "connect-timeout; row=doors.net.upstream"),
        ("app", "ok.sharness.test", 400, "missing-port; row=doors.net.framing"),
    ],
)
async def test_refusals_over_mtls(net: TestNet, door: MtlsDoor, role: str, authority: str, status: int,
                                  refusal: str) -> None:
    stream = await door.client(role)
    reply = await proxy_connect(stream, authority)
    await stream.aclose()
    assert (reply.status, reply.refusal) == (status, refusal)
    await wait_for_audit(net, 1)
    [event] = net.audit
    assert event["decision"] == "refuse" and event["client_role"] == role and event["status"] == status
    assert net.logs["private-https"].connections == 0


async def test_a_role_without_an_allow_row_is_refused_naming_it(net: TestNet, door: MtlsDoor) -> None:
    stream = await door.client("keys")
    reply = await proxy_connect(stream, "ok.sharness.test:443")
    await stream.aclose()
    assert (reply.status, reply.refusal) == (403, "not-allowlisted; row=doors.net.allow")
    assert "doors.net.allow.keys" in reply.json()["hint"]
    await wait_for_audit(net, 1)
    assert net.audit[0]["client_role"] == "keys" and net.logs["public-https"].connections == 0


async def test_sni_mismatch_over_mtls_is_refused(net: TestNet, door: MtlsDoor) -> None:
    stream = await door.client("shell")
    assert (await proxy_connect(stream, "ok.sharness.test:443")).status == 200
    await stream.send_all(hellos.real_client_hello("evil.sharness.test"))
    received = b""
    while data := await stream.receive_some(65536):
        received += data
    await stream.aclose()
    assert received == b"\x15\x03\x03\x00\x02\x02\x31"  # TLS alert: access_denied, inside the mTLS stream
    await wait_for_audit(net, 1)
    assert net.audit[0]["reason"] == "sni-mismatch" and net.audit[0]["client_role"] == "shell"


async def test_a_client_without_the_edge_is_refused_before_the_proxy(net: TestNet, door: MtlsDoor) -> None:
    stream = await door.client("model")
    await stream.send_all(b"CONNECT ok.sharness.test:443 HTTP/1.1\r\nHost: ok.sharness.test:443\r\n\r\n")
    reply, _ = await read_reply(stream, method=b"CONNECT")
    await stream.aclose()
    assert reply is not None and reply.status == 403 and reply.refusal == ""
    assert reply.json()["error"] == "edges"
    assert net.audit == [] and net.logs["public-https"].connections == 0
    assert [e["client_role"] for e in door.s.events if e["kind"] == "transport.refused"] == ["model"]


async def test_plain_http_over_mtls_keeps_the_connection(net: TestNet, door: MtlsDoor) -> None:
    stream = await door.client("app")
    request = b"GET http://plain.sharness.test/a?token=x HTTP/1.1\r\nHost: evil.sharness.test\r\n\r\n"
    first, second = await http(stream, request * 2, 2)
    await stream.aclose()
    assert first is not None and second is not None and first.status == second.status == 200
    assert first.json()["host"] == "plain.sharness.test"
    await wait_for_audit(net, 2)
    assert [(e["client_role"], e["requested"]) for e in net.audit] == [("app", "http://plain.sharness.test")] * 2


async def test_tunnel_limit_per_role_over_mtls_is_429(net: TestNet) -> None:
    proxy = Proxy(net.config(max_tunnels=1), net.opened.append, net.resolver, report=net.audit.append)
    async with session(EDGES) as s:
        door = await _start(net, s, proxy, name="net-limited")
        held = await door.client("shell")
        assert (await proxy_connect(held, "ok.sharness.test:443")).status == 200
        stream = await door.client("shell")
        reply = await proxy_connect(stream, "ok.sharness.test:443")
        await stream.aclose()
        await held.aclose()
    assert reply.status == 429 and reply.headers["retry-after"] == "1"


async def _status_messages(status: trio.socket.SocketType, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < count:
        out.append(json.loads(await status.recv(65536)))
    return out


async def test_serve_net_proxies_for_a_door_on_its_edge(net: TestNet) -> None:
    pki = SessionPKI.create()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status = trio.socket.from_stdlib_socket(ours)
    with scratch_dir() as directory:
        path = os.path.join(directory, "net.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
        memfd = os.memfd_create("sharness-test-net-svid", 0)
        os.write(memfd, pki.svid_pem("net"))
        contract = DoorContract(role="net", session_id=pki.session_id, trust_domain=pki.trust_domain,
                                edges=tuple(sorted(DEFAULT_EDGES)), bundle_pem=pki.bundle_pem().decode(),
                                rows={"allow": {"shell": ["ok.sharness.test:443"]}},
                                listen_fds={"door": listener.detach()}, status_fd=theirs.detach(), svid_fd=memfd)
        s = Session(pki, directory)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_net, contract, StatusSender(contract.status_fd), net.resolver, TEST_INTERNET)
            assert await _status_messages(status, 1) == [{"type": "ready"}]
            stream = await connect(s.dial("net", path, s.client_ctx("shell"), "shell"))
            await stream.send_all(b"GET /v0/hello HTTP/1.1\r\nHost: net\r\n\r\n")
            hello, _ = await read_reply(stream)
            assert hello is not None and hello.json()["role"] == "net"  # the same connection, then the proxy
            assert (await proxy_connect(stream, "ok.sharness.test:443")).status == 200
            assert (await https_get(stream, net.tls_context(), "ok.sharness.test")).status == 200
            await stream.aclose()
            events = [m["event"] for m in await _status_messages(status, 3)]
            assert [e["kind"] for e in events] == ["http.request", "net.open", "net.request"]
            assert events[2]["client_role"] == "shell" and events[2]["decision"] == "allow"
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("raw", "refusal"),
    [
        # h11 (the door's HTTP server) accepts these heads; the proxy re-reads the same raw bytes and refuses.
        (b"GET http://plain.sharness.test/ HTTP/1.1\nHost: x\n\n", "bare-lf; row=doors.net.framing"),
        (b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
         "obs-fold; row=doors.net.framing"),
        (b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
         "duplicate-content-length; row=doors.net.framing"),
        # These the door's HTTP server refuses first, in the door error shape (no X-Sharness-Refusal).
        (b"POST http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n"
         b"hello", ""),
        (b"POST http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", ""),
        (b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", ""),
    ],
)
async def test_framing_attacks_over_mtls_are_400(net: TestNet, door: MtlsDoor, raw: bytes, refusal: str) -> None:
    stream = await door.client("app")
    [reply] = await http(stream, raw)
    await stream.aclose()
    assert reply is not None and reply.status == 400 and reply.refusal == refusal
    assert reply.headers["connection"] == "close" and net.logs["public-http"].connections == 0
