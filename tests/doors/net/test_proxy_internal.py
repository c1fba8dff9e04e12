"""Internal destinations on the test network: a named host reaches its private range through the door, and
nothing else does — not another private address, not this host's own address, not loopback."""

from __future__ import annotations

import socket
import ssl

import pytest
import trio

from doors.net._policy import Allowlist

from .client import connect, https_get
from .conftest import ALLOW, DOOR_PRIV, WAN_PRIV, TestNet, listen_in
from .servers import Log, serve_https
from .test_proxy_connect import refused_connect, wait_for_audit

pytestmark = pytest.mark.root

SELF_PORT = 8443
INTERNAL_ALLOW = {**ALLOW, "app": [*ALLOW["app"], f"selfpriv.sharness.test:{SELF_PORT}"]}


async def _proxy(net: TestNet, internal: dict[str, dict[str, list[str]]]) -> int:
    _, port = await net.start_proxy(allowlist=Allowlist.from_rows(INTERNAL_ALLOW, internal))
    return port


async def test_a_named_host_reaches_its_internal_range(net: TestNet) -> None:
    port = await _proxy(net, {"app": {"private.sharness.test:443": ["10.77.0.0/24"]}})
    stream = await net.client(port)
    assert (await connect(stream, "private.sharness.test:443")).status == 200
    page = await https_get(stream, net.tls_context(), "private.sharness.test", "/internal")
    assert page.status == 200 and page.json()["server"] == "private-https"
    await stream.aclose()
    await wait_for_audit(net, 1)
    [event] = net.audit
    assert (event["decision"], event["address"], event["row"]) == ("allow", WAN_PRIV, "doors.net.allow.app[5]")


async def test_without_the_row_the_same_host_is_refused_and_never_reached(net: TestNet) -> None:
    port = await _proxy(net, {})
    assert await refused_connect(net, "private.sharness.test:443", port) == (
        403, "private; row=doors.net.public_addresses")
    assert net.logs["private-https"].connections == 0


@pytest.mark.parametrize(("internal", "authority", "refusal"), [
    # The range names another network: the host's real address is outside it.
    ({"private.sharness.test:443": ["10.78.0.0/16"]}, "private.sharness.test:443",
     "outside-internal-ranges; row=doors.net.internal.app['private.sharness.test:443']"),
    # The row is for one host: another private name on the same range stays refused.
    ({"private.sharness.test:443": ["10.77.0.0/24"]}, "private.sharness.test:80",
     "private; row=doors.net.public_addresses"),
    # A public answer for a host the row says is internal: refused, the row says where it lives.
    ({"ok.sharness.test:443": ["10.77.0.0/24"]}, "ok.sharness.test:443",
     "outside-internal-ranges; row=doors.net.internal.app['ok.sharness.test:443']"),
    # Loopback and mixed answers stay refused whatever the row's range.
    ({"loop.sharness.test:443": ["10.77.0.0/24"]}, "loop.sharness.test:443",
     "loopback; row=doors.net.public_addresses"),
    ({"mixed.sharness.test:443": ["10.77.0.0/24"]}, "mixed.sharness.test:443",
     "mixed-answers-outside-internal-ranges; row=doors.net.internal.app['mixed.sharness.test:443']"),
    ({"mapped.sharness.test:443": ["10.77.0.0/24"]}, "mapped.sharness.test:443",
     "ipv4-mapped; row=doors.net.public_addresses"),
])
async def test_internal_rows_refuse_everything_else(net: TestNet, internal: dict[str, list[str]], authority: str,
                                                     refusal: str) -> None:
    port = await _proxy(net, {"app": internal})
    assert await refused_connect(net, authority, port) == (403, refusal)
    assert net.logs["private-https"].connections == net.logs["private-http"].connections == 0


async def test_this_hosts_own_address_is_refused_inside_an_internal_range(net: TestNet) -> None:
    """10.77.0.1 is the door's own address (its network namespace): a range holding it still never reaches it."""
    net.zone.static[("selfpriv.sharness.test", "A")] = [DOOR_PRIV]
    net.zone.static[("selfpriv.sharness.test", "AAAA")] = []
    own = Log("own-host")
    listener = trio.SocketListener(listen_in(net.names.door, DOOR_PRIV, SELF_PORT))
    net.nursery.start_soon(serve_https, listener, own, _server_context(net))
    port = await _proxy(net, {"app": {f"selfpriv.sharness.test:{SELF_PORT}": ["10.77.0.0/24"]}})
    assert await refused_connect(net, f"selfpriv.sharness.test:{SELF_PORT}", port) == (
        403, "own-host; row=doors.net.public_addresses")
    assert own.connections == 0
    # Control: the host is there, and a direct socket from the door's namespace reaches it.
    with socket.create_connection((DOOR_PRIV, SELF_PORT), timeout=5):
        pass
    while own.connections == 0:
        await trio.sleep(0.01)


def _server_context(net: TestNet) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    net.ca.issue_cert("selfpriv.sharness.test").configure_cert(context)
    return context
