"""CONNECT through the proxy on the test network: allowlist, addresses, DNS tricks, ClientHello checks."""

from __future__ import annotations

import pytest
import trio

from . import hellos
from .client import connect, https_get
from .conftest import WAN_V4, TestNet

pytestmark = pytest.mark.root


async def test_allowed_tunnel_reaches_the_host(net: TestNet) -> None:
    stream = await net.client()
    reply = await connect(stream, "ok.sharness.test:443")
    assert reply.status == 200
    page = await https_get(stream, net.tls_context(), "ok.sharness.test", "/hello")
    assert page.status == 200 and page.json()["target"] == "/hello"
    await stream.aclose()
    await wait_for_audit(net, 1)
    [event] = net.audit
    assert event["decision"] == "allow" and event["client_role"] == "app" and event["host"] == "ok.sharness.test"
    assert event["address"] == WAN_V4 and event["row"] == "doors.net.allow.app[0]"
    assert event["sni"] == "ok.sharness.test"  # the ClientHello's name, checked against the CONNECT host
    assert event["bytes_up"] > 0 and event["bytes_down"] > 0


async def wait_for_audit(net: TestNet, count: int) -> None:
    """The audit event lands when the proxy's handler ends; wait for it (no timing threshold)."""
    while len(net.audit) < count:
        await trio.sleep(0.01)


async def refused_connect(net: TestNet, authority: str, port: int | None = None) -> tuple[int, str]:
    stream = await net.client(port)
    reply = await connect(stream, authority)
    await stream.aclose()
    return reply.status, reply.refusal


@pytest.mark.parametrize(
    ("authority", "status", "refusal"),
    [
        ("evil.sharness.test:443", 403, "not-allowlisted; row=doors.net.allow"),
        ("ok.sharness.test:444", 403, "not-allowlisted; row=doors.net.allow"),
        ("wild.sharness.test:443", 403, "not-allowlisted; row=doors.net.allow"),
        ("198.51.100.3:443", 403, "ip-literal-not-allowed; row=doors.net.allow"),
        ("3329754114:443", 403, "non-canonical-number; row=doors.net.allow"),
        ("0xc6.51.100.2:443", 403, "non-canonical-number; row=doors.net.allow"),
        # Unicode digits and dots on the wire: h11 refuses non-ASCII in the request line (400) before the
        # host check would (403, tests/doors/net/test_host.py).
        ("１９８.51.100.2:443", 400, "bad-request; row=doors.net.framing"),
        ("198。51.100.2:443", 400, "bad-request; row=doors.net.framing"),
        ("private.sharness.test:443", 403, "private; row=doors.net.public_addresses"),
        ("loop.sharness.test:443", 403, "loopback; row=doors.net.public_addresses"),
        ("mixed.sharness.test:443", 403, "mixed-answers-private; row=doors.net.public_addresses"),
        ("mapped.sharness.test:443", 403, "ipv4-mapped; row=doors.net.public_addresses"),
        ("nat64.sharness.test:443", 403, "nat64-private; row=doors.net.public_addresses"),
        ("self.sharness.test:3128", 403, "own-listener; row=doors.net.public_addresses"),
        ("nx.sharness.test:443", 502, "resolution-failed; row=doors.net.upstream"),
        ("silent.sharness.test:443", 502, "resolution-timeout; row=doors.net.upstream"),
        ("closed.sharness.test:443", 502, "connect-failed; row=doors.net.upstream"),
        ("blackhole.sharness.test:443", 504, "connect-timeout; row=doors.net.upstream"),
        ("ok.sharness.test", 400, "missing-port; row=doors.net.framing"),
    ],
)
async def test_refusals(net: TestNet, authority: str, status: int, refusal: str) -> None:
    assert await refused_connect(net, authority) == (status, refusal)
    await wait_for_audit(net, 1)
    [event] = net.audit
    assert event["decision"] == "refuse" and event["status"] == status
    assert net.logs["private-https"].connections == 0 and net.logs["private-http"].connections == 0


async def test_host_normalised_before_matching(net: TestNet) -> None:
    stream = await net.client()
    assert (await connect(stream, "OK.Sharness.Test.:443")).status == 200
    assert (await https_get(stream, net.tls_context(), "ok.sharness.test")).status == 200
    await stream.aclose()
    await wait_for_audit(net, 1)
    assert net.audit[0]["host"] == "ok.sharness.test" and net.audit[0]["requested"] == "OK.Sharness.Test.:443"


async def test_refusal_body_names_row_and_hint(net: TestNet) -> None:
    stream = await net.client()
    reply = await connect(stream, "evil.sharness.test:443")
    body = reply.json()
    assert body["error"] == "doors.net.allow" and body["who"] == "net" and body["reason"] == "not-allowlisted"
    assert "evil.sharness.test:443" in body["hint"] and "doors.net.allow.app" in body["hint"]
    assert reply.headers["content-type"] == "application/json"


async def test_role_is_the_listener(net: TestNet) -> None:
    _, shell_port = await net.start_proxy(role="shell")
    refused = await refused_connect(net, "plain.sharness.test:80", shell_port)
    assert refused == (403, "not-allowlisted; row=doors.net.allow")
    stream = await net.client(shell_port)
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    await stream.aclose()


async def test_rebinding_resolves_once_and_dials_the_checked_address(net: TestNet) -> None:
    stream = await net.client()
    assert (await connect(stream, "rebind.sharness.test:443")).status == 200
    page = await https_get(stream, net.tls_context(), "rebind.sharness.test")
    assert page.status == 200 and page.json()["server"] == "public-https"
    await stream.aclose()
    assert net.zone.queries[("rebind.sharness.test", "A")] == 1  # one lookup for the whole request
    # The same name now answers privately: the next request is refused, nothing reached the private host.
    assert await refused_connect(net, "rebind.sharness.test:443") == (403, "private; row=doors.net.public_addresses")
    assert net.logs["private-https"].connections == 0
    await wait_for_audit(net, 2)
    assert [e["address"] for e in net.audit] == [WAN_V4, ""]


async def test_ipv6_test_internet(net: TestNet) -> None:
    stream = await net.client()
    assert (await connect(stream, "v6.sharness.test:443")).status == 200
    assert (await https_get(stream, net.tls_context(), "v6.sharness.test")).json()["server"] == "v6-https"


async def test_ip_literal_allowed_by_its_row_without_sni(net: TestNet) -> None:
    stream = await net.client()
    assert (await connect(stream, "198.51.100.2:443")).status == 200
    context = net.tls_context()
    context.check_hostname = False
    tls = trio.SSLStream(stream, context, server_hostname=None)
    await tls.do_handshake()
    await tls.aclose()


async def tunnel_then_send(net: TestNet, authority: str, first_flight: list[bytes]) -> bytes:
    """Open a tunnel and send bytes segment by segment; return what came back before close."""
    stream = await net.client()
    assert (await connect(stream, authority)).status == 200
    for segment in first_flight:
        await stream.send_all(segment)
        await trio.sleep(0.01)
    received = b""
    while data := await stream.receive_some(65536):
        received += data
    await stream.aclose()
    return received


@pytest.mark.parametrize(
    ("sni", "reason"),
    [("evil.sharness.test", "sni-mismatch"), ("a.wild.sharness.test", "sni-mismatch"), (None, "missing-sni")],
)
async def test_client_hello_refused(net: TestNet, sni: str | None, reason: str) -> None:
    back = await tunnel_then_send(net, "ok.sharness.test:443", [hellos.real_client_hello(sni)])
    assert back == b"\x15\x03\x03\x00\x02\x02\x31"  # TLS alert: access_denied
    await wait_for_audit(net, 1)
    assert net.audit[0]["reason"] == reason and net.audit[0]["row"] == "doors.net.tls_sni"
    assert net.logs["public-https"].connections == 1  # dialled, but not one client byte was forwarded


async def test_real_tls_client_with_wrong_sni_fails(net: TestNet) -> None:
    stream = await net.client()
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    tls = trio.SSLStream(stream, net.tls_context(), server_hostname="a.wild.sharness.test")
    with pytest.raises(trio.BrokenResourceError) as info:
        await tls.do_handshake()
    assert "ACCESS_DENIED" in repr(info.value.__cause__).upper()


async def test_split_client_hello_passes(net: TestNet) -> None:
    wire = hellos.client_hello(b"ok.sharness.test", size=100)
    segments = [wire[i : i + 37] for i in range(0, len(wire), 37)]
    await tunnel_then_send(net, "ok.sharness.test:443", segments)
    await wait_for_audit(net, 1)
    assert net.audit[0]["decision"] == "allow"
    assert net.audit[0]["bytes_up"] == len(wire)


@pytest.mark.parametrize(
    ("flight", "reason"),
    [
        ([hellos.client_hello(b"ok.sharness.test", extra=[hellos.extension(0xFE0D, b"\x00" * 40)])], "ech"),
        ([b"\x16\x03\x01\x00\x04\x01\x01\x00\x00"], "oversized-hello"),
        ([hellos.records(hellos.handshake(hellos.hello_body([], suites=b"")))], "malformed-hello"),
        ([b"GET / HTTP/1.1\r\nHost: ok.sharness.test\r\n\r\n"], "not-tls"),
        ([b"\x16\x03\x01\x00"], "truncated-hello"),
    ],
)
async def test_bad_first_flights(net: TestNet, flight: list[bytes], reason: str) -> None:
    await tunnel_then_send_and_close(net, flight)
    await wait_for_audit(net, 1)
    assert net.audit[0]["reason"] == reason and net.audit[0]["decision"] == "refuse"
    assert net.audit[0]["bytes_up"] == 0


async def tunnel_then_send_and_close(net: TestNet, flight: list[bytes]) -> None:
    stream = await net.client()
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    for segment in flight:
        await stream.send_all(segment)
    await stream.send_eof()
    while await stream.receive_some(65536):
        pass
    await stream.aclose()


async def test_non_tls_on_a_tls_row_refused_raw_row_relays(net: TestNet) -> None:
    back = await tunnel_then_send(net, "ok.sharness.test:7", [b"SSH-2.0-x\r\n"])
    assert back == b""
    stream = await net.client()
    assert (await connect(stream, "raw.sharness.test:7")).status == 200
    await stream.send_all(b"ping\n")
    assert await stream.receive_some(100) == b"ping\n"
    await stream.aclose()
    await wait_for_audit(net, 2)
    assert [e["reason"] for e in net.audit] == ["not-tls", "allowlisted"]


async def test_tunnel_limit_429(net: TestNet) -> None:
    proxy, port = await net.start_proxy(max_tunnels=1)
    first = await net.client(port)
    assert (await connect(first, "raw.sharness.test:7")).status == 200
    assert dict(proxy.statistics().open_by_role) == {"app": 1}
    second = await net.client(port)
    reply = await connect(second, "raw.sharness.test:7")
    assert reply.status == 429 and reply.headers["retry-after"] == "1"
    assert reply.refusal == "too-many-tunnels; row=doors.net.limits"
    await first.aclose()
    await wait_for_audit(net, 2)
    stats = proxy.statistics()
    assert (dict(stats.open_by_role), stats.requests, stats.refused) == ({}, 2, 1)
    third = await net.client(port)
    assert (await connect(third, "raw.sharness.test:7")).status == 200


async def test_idle_tunnel_closed(net: TestNet) -> None:
    _, port = await net.start_proxy(idle_timeout_s=0.2)
    stream = await net.client(port)
    assert (await connect(stream, "raw.sharness.test:7")).status == 200
    assert await stream.receive_some(100) == b""  # the proxy ends the idle tunnel
    await wait_for_audit(net, 1)
    assert net.audit[0]["reason"] == "idle-timeout"


async def test_stalled_client_hello_closed(net: TestNet) -> None:
    _, port = await net.start_proxy(head_timeout_s=0.2)
    stream = await net.client(port)
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    assert await stream.receive_some(100) == b""
    await wait_for_audit(net, 1)
    assert net.audit[0]["reason"] == "hello-timeout"


async def test_self_connection_by_literal_refused(net: TestNet) -> None:
    # 127.0.0.1:3128 is the proxy's own listener in the app ns; it is loopback, never dialled.
    stream = await net.client()
    reply = await connect(stream, "127.0.0.1:3128")
    assert reply.status == 403 and reply.refusal.startswith("ip-literal-not-allowed")


@pytest.mark.parametrize(("sni", "decision"), [(b"ok.sharness.test", "allow"), (b"evil.sharness.test", "refuse")])
async def test_client_hello_in_the_connect_segment(net: TestNet, sni: bytes, decision: str) -> None:
    wire = hellos.client_hello(sni)
    stream = await net.client()
    await stream.send_all(b"CONNECT ok.sharness.test:443 HTTP/1.1\r\nHost: x\r\n\r\n" + wire)  # one write
    await stream.send_eof()
    received = b""
    while data := await stream.receive_some(65536):
        received += data
    assert received.startswith(b"HTTP/1.1 200 ")
    await wait_for_audit(net, 1)
    assert net.audit[0]["decision"] == decision
    assert net.audit[0]["bytes_up"] == (len(wire) if decision == "allow" else 0)
