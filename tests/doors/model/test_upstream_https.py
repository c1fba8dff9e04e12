"""The HTTPS upstream: verified TLS against the CA bundle row, addresses checked before dialling, the body
streamed, the released key sent. The twin serves behind TLS on loopback, which only this test's seam
(`test_internet`) lets the client dial: no row can."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anthropic
import pytest
import trio
import trustme

from doors._refusal import DoorRefused
from doors.model._config import config_from_rows
from doors.model._upstream import UpstreamRequest
from doors.model._upstream_https import HttpsUpstream
from doors.model.twin import TwinUpstream
from doors.model.twin._server import ServerLimits, serve_connection
from tests.doors.model._harness import MODEL, served

HOST = "upstream.sharness.test"
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


class _Resolver:
    def __init__(self, *answers: str) -> None:
        self.answers = [ipaddress.ip_address(answer) for answer in answers]

    async def resolve(self, name: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        return list(self.answers)


@asynccontextmanager
async def _https_twin(ca: trustme.CA) -> AsyncIterator[int]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST).configure_cert(context)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")

    async def one(stream: trio.SocketStream) -> None:
        tls = trio.SSLStream(stream, context, server_side=True)
        with suppress(trio.BrokenResourceError, ssl.SSLError):
            await serve_connection(tls, TwinUpstream(None), ServerLimits())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, one, listeners)
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


def _upstream(tmp_path: Path, port: int, trusted: trustme.CA, resolver: _Resolver,
              seam: tuple[ipaddress.IPv4Network, ...] = LOOPBACK, **rows: object) -> HttpsUpstream:
    bundle = tmp_path / "ca.pem"
    trusted.cert_pem.write_to_path(str(bundle))
    config = config_from_rows({"upstream": f"https://{HOST}:{port}", "secret": "anthropic",
                               "budget_microusd": 1_000_000, "ca_bundle": str(bundle), **rows})
    return HttpsUpstream(config, resolver, test_internet=seam)


async def test_the_sdk_reaches_a_verified_https_upstream_through_the_door(tmp_path: Path) -> None:
    ca = trustme.CA()
    async with _https_twin(ca) as port:
        upstream = _upstream(tmp_path, port, ca, _Resolver("127.0.0.1"))

        async def key() -> bytes:
            return b"sk-released"

        config = config_from_rows({"upstream": f"https://{HOST}:{port}", "secret": "anthropic",
                                   "budget_microusd": 1_000_000})
        async with served(config, upstream=upstream, key_source=key) as door:
            def stream(client: anthropic.Anthropic) -> str:
                with client.messages.stream(model=MODEL, max_tokens=32,
                                            messages=[{"role": "user", "content": "hi"}]) as events:
                    return str(events.get_final_message().stop_reason)
            assert await door.run(stream) == "end_turn"
            assert await door.run(lambda c: c.messages.count_tokens(
                model=MODEL, messages=[{"role": "user", "content": "hi"}]).input_tokens) > 0
        (call,) = [c for c in door.audit.calls() if c["route"] == "/v1/messages"]
        assert call["upstream"] == f"https://{HOST}:{port}" and call["ended"] == "complete"


async def test_an_upstream_whose_certificate_the_bundle_does_not_trust_is_never_sent_the_key(tmp_path: Path) -> None:
    async with _https_twin(trustme.CA()) as port:
        upstream = _upstream(tmp_path, port, trustme.CA(), _Resolver("127.0.0.1"))
        with pytest.raises(OSError, match="certificate is not trusted"):
            await upstream.exchange(UpstreamRequest(b"POST", b"/v1/messages", ((b"x-api-key", b"sk-x"),), b"{}"))


@pytest.mark.parametrize(("answer", "rows"), [
    ("127.0.0.1", {}),  # loopback: never an upstream
    ("169.254.169.254", {}),  # link-local: the cloud metadata service
    ("10.1.2.3", {}),  # private, and no internal_ranges row
    ("10.1.2.3", {"internal_ranges": ["10.9.0.0/16"]}),  # private, outside the row's range
])
async def test_an_address_the_door_may_not_dial_is_refused_naming_the_row(
        tmp_path: Path, answer: str, rows: dict[str, object]) -> None:
    upstream = _upstream(tmp_path, 443, trustme.CA(), _Resolver(answer), seam=(), **rows)
    with pytest.raises(DoorRefused) as refused:
        await upstream.exchange(UpstreamRequest(b"POST", b"/v1/messages", (), b"{}"))
    assert refused.value.refusal.row == "doors.model.internal_ranges"
    assert answer in str(refused.value.refusal.detail)


def test_internal_ranges_never_reach_loopback_or_link_local() -> None:
    for network in ("127.0.0.0/8", "0.0.0.0/0", "169.254.0.0/16", "::1/128", "fe80::/10"):
        with pytest.raises(ValueError, match="loopback, link-local"):
            config_from_rows({"upstream": "https://h.test", "secret": "s", "budget_microusd": 1,
                              "internal_ranges": [network]})
