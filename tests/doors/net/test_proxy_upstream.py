"""Through a corporate upstream proxy (`doors.net.upstream_proxy`) on the test network: the door keeps every
check, then opens a CONNECT tunnel at the proxy — the proxy's address is the only one it dials, the credential
goes to the proxy alone, and what the door refuses never reaches the proxy."""

from __future__ import annotations

import base64
import json

import pytest
import trio

from doors.net._host import parse_authority
from doors.net._via_proxy import UpstreamProxy, Via

from .client import connect, http, https_get
from .conftest import DOOR_V4, WAN2_V4, WAN_V4, TestNet, listen_in
from .test_proxy_connect import refused_connect, wait_for_audit
from .upstream_proxy import TestUpstreamProxy

pytestmark = pytest.mark.root

PROXY_PORT = 3128
CREDENTIAL = b"corp-user:s3cret-proxy-pw"


async def _upstream(net: TestNet, **kwargs: object) -> TestUpstreamProxy:
    upstream = TestUpstreamProxy(net.names.wan, net.zone, **kwargs)  # type: ignore[arg-type]
    net.nursery.start_soon(upstream.serve, trio.SocketListener(listen_in(net.names.wan, WAN2_V4, PROXY_PORT)))
    return upstream


async def _door(net: TestNet, address: str = f"{WAN2_V4}:{PROXY_PORT}", resolve_by_proxy: bool = False,
                credential: bytes | None = CREDENTIAL) -> int:
    host, port = parse_authority(address)

    async def release() -> bytes:
        assert credential is not None
        return credential

    via = Via(UpstreamProxy(host, port, resolve_by_proxy, "proxy" if credential else None),
              release if credential is not None else None)
    _, door_port = await net.start_proxy(via=via)
    return door_port


async def test_an_allowed_tunnel_goes_through_the_proxy_with_the_checked_address_and_the_credential(
        net: TestNet) -> None:
    upstream = await _upstream(net, credential=CREDENTIAL)
    stream = await net.client(await _door(net))
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    page = await https_get(stream, net.tls_context(), "ok.sharness.test", "/via-proxy")
    assert page.status == 200 and page.json()["target"] == "/via-proxy"
    await stream.aclose()
    await wait_for_audit(net, 1)
    assert upstream.log.targets == [f"{WAN_V4}:443"]  # the address the door checked, not the name
    assert upstream.log.credentials == ["Basic " + base64.b64encode(CREDENTIAL).decode()]
    [event] = net.audit
    assert (event["decision"], event["address"], event["proxy"], event["sni"]) == (
        "allow", WAN_V4, f"{WAN2_V4}:{PROXY_PORT}", "ok.sharness.test")
    shown = json.dumps([*net.audit, *net.opened])
    assert CREDENTIAL.decode() not in shown and base64.b64encode(CREDENTIAL).decode() not in shown


async def test_when_the_proxy_resolves_the_door_asks_for_the_name(net: TestNet) -> None:
    upstream = await _upstream(net)
    stream = await net.client(await _door(net, resolve_by_proxy=True, credential=None))
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    assert (await https_get(stream, net.tls_context(), "ok.sharness.test", "/")).status == 200
    await stream.aclose()
    await wait_for_audit(net, 1)
    assert upstream.log.targets == ["ok.sharness.test:443"] and upstream.log.credentials == [None]
    assert net.zone.queries[("ok.sharness.test", "A")] == 0  # the door did not resolve it
    assert (net.audit[0]["answers"], net.audit[0]["address"]) == ([], "")


@pytest.mark.parametrize(("authority", "refusal"), [
    ("evil.sharness.test:443", "not-allowlisted; row=doors.net.allow"),
    ("private.sharness.test:443", "private; row=doors.net.public_addresses"),
    ("loop.sharness.test:443", "loopback; row=doors.net.public_addresses"),
    ("mixed.sharness.test:443", "mixed-answers-private; row=doors.net.public_addresses"),
    ("198.51.100.3:443", "ip-literal-not-allowed; row=doors.net.allow"),
])
async def test_what_the_door_refuses_never_reaches_the_proxy(net: TestNet, authority: str, refusal: str) -> None:
    upstream = await _upstream(net, credential=CREDENTIAL)
    assert await refused_connect(net, authority, await _door(net)) == (403, refusal)
    assert upstream.log.connections == 0


async def test_a_refused_client_hello_sends_no_byte_through_the_proxy(net: TestNet) -> None:
    upstream = await _upstream(net, credential=CREDENTIAL)
    stream = await net.client(await _door(net))
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    with pytest.raises((trio.BrokenResourceError, OSError)):  # the door answers access_denied and closes
        await https_get(stream, net.tls_context(), "a.wild.sharness.test", "/")
    await stream.aclose()
    await wait_for_audit(net, 1)
    assert net.audit[0]["reason"] == "sni-mismatch"
    assert upstream.log.targets == [f"{WAN_V4}:443"] and upstream.log.bytes_up == 0
    assert net.logs["public-https"].requests == []


async def test_with_the_proxy_down_nothing_is_dialled_directly(net: TestNet) -> None:
    """The attack a missing proxy row would let through: the door falls back to the destination itself."""
    door_port = await _door(net, address=f"{WAN2_V4}:3999")
    assert await refused_connect(net, "ok.sharness.test:443", door_port) == (
        502, "upstream-proxy-unreachable; row=doors.net.upstream_proxy")
    assert net.logs["public-https"].connections == 0


async def test_a_wrong_credential_is_the_proxys_407_said_as_502(net: TestNet) -> None:
    upstream = await _upstream(net, credential=b"someone-else:pw")
    stream = await net.client(await _door(net))
    reply = await connect(stream, "ok.sharness.test:443")
    await stream.aclose()
    assert (reply.status, reply.refusal) == (502, "upstream-proxy-refused; row=doors.net.upstream_proxy")
    assert "answered 407" in reply.json()["detail"] and CREDENTIAL.decode() not in json.dumps(reply.json())
    assert upstream.log.connections == 1 and net.logs["public-https"].connections == 0


async def test_the_proxys_502_for_one_address_is_passed_on(net: TestNet) -> None:
    upstream = await _upstream(net, refuse=frozenset({f"{WAN_V4}:443"}))
    reply_status = await refused_connect(net, "ok.sharness.test:443", await _door(net, credential=None))
    assert reply_status == (502, "upstream-proxy-refused; row=doors.net.upstream_proxy")  # its 403, said as 502
    assert upstream.log.targets == [f"{WAN_V4}:443"]


async def test_plain_http_goes_through_a_tunnel_at_the_proxy(net: TestNet) -> None:
    upstream = await _upstream(net)
    stream = await net.client(await _door(net, credential=None))
    [reply] = await http(stream, b"GET http://plain.sharness.test/x?token=t0ken HTTP/1.1\r\nHost: plain.sharness.test"
                                 b"\r\n\r\n")
    await stream.aclose()
    assert reply is not None and reply.status == 200 and reply.json()["target"] == "/x?token=t0ken"
    assert upstream.log.targets == [f"{WAN_V4}:80"]


@pytest.mark.parametrize(("address", "reason"), [
    ("loop.sharness.test:3127", "upstream-proxy-loopback"),
    (f"{DOOR_V4}:3999", "upstream-proxy-own-host"),  # the door's own address: this host
    (f"{DOOR_V4}:3128", "upstream-proxy-own-listener"),
])
async def test_the_proxy_itself_is_never_loopback_or_this_host(net: TestNet, address: str, reason: str) -> None:
    assert await refused_connect(net, "ok.sharness.test:443", await _door(net, address=address, credential=None)) == (
        403, f"{reason}; row=doors.net.public_addresses")
