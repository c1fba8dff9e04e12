"""The proxy acts only once its `net.open` event is queued: a full audit queue is a 503, nothing resolved or dialled."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from doors._audit_queue import AuditBackpressure
from doors.net.proxy import Proxy

from .client import connect, http
from .conftest import TestNet, listen_in
from .test_proxy_connect import wait_for_audit

pytestmark = pytest.mark.root


def _full(event: dict[str, Any]) -> None:
    raise AuditBackpressure("net")


async def _proxy_behind_a_full_queue(net: TestNet, port: int) -> None:
    proxy = Proxy(net.config(), _full, net.resolver, report=net.audit.append)
    await net.nursery.start(proxy.serve, trio.SocketListener(listen_in(net.names.app, "127.0.0.1", port)), "app")


async def test_a_connect_is_503_and_neither_resolved_nor_dialled(net: TestNet) -> None:
    await _proxy_behind_a_full_queue(net, 3150)
    stream = await net.client(3150)
    reply = await connect(stream, "ok.sharness.test:443")
    await stream.aclose()
    assert (reply.status, reply.refusal) == (503, "audit-backpressure; row=audit_backpressure")
    assert reply.json() == {**reply.json(), "error": "audit_backpressure", "who": "net"}
    assert net.resolver.calls["ok.sharness.test"] == 0 and net.logs["public-https"].connections == 0
    await wait_for_audit(net, 1)
    assert net.audit[0] == {**net.audit[0], "kind": "net.request", "decision": "refuse", "status": 503,
                            "reason": "audit-backpressure", "answers": [], "address": "", "bytes_up": 0}


async def test_a_plain_request_is_503_and_never_sent(net: TestNet) -> None:
    await _proxy_behind_a_full_queue(net, 3151)
    stream = await net.client(3151)
    [reply] = await http(stream, b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: plain.sharness.test\r\n\r\n")
    await stream.aclose()
    assert reply is not None and reply.status == 503
    assert net.resolver.calls["plain.sharness.test"] == 0 and net.logs["public-http"].connections == 0


async def test_a_refusal_needs_no_room_first(net: TestNet) -> None:
    """Refusing is no act: the allowlist's 403 is answered (and reported) even when the queue is full."""
    await _proxy_behind_a_full_queue(net, 3152)
    stream = await net.client(3152)
    reply = await connect(stream, "evil.sharness.test:443")
    await stream.aclose()
    assert (reply.status, reply.refusal) == (403, "not-allowlisted; row=doors.net.allow")


async def test_the_open_event_comes_before_the_dial(net: TestNet) -> None:
    seen: list[int] = []

    def audit(event: dict[str, Any]) -> None:
        seen.append(net.logs["public-https"].connections)  # how many the host had accepted at that moment
        net.opened.append(event)

    proxy = Proxy(net.config(), audit, net.resolver, report=net.audit.append)
    await net.nursery.start(proxy.serve, trio.SocketListener(listen_in(net.names.app, "127.0.0.1", 3153)), "app")
    before = net.logs["public-https"].connections
    stream = await net.client(3153)
    assert (await connect(stream, "ok.sharness.test:443")).status == 200
    await stream.aclose()
    assert seen == [before] and net.opened[0]["kind"] == "net.open"
