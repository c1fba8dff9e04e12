"""A model door's Gateway served as plain HTTP on a loopback port, in process, with the official SDK as client."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic
import trio

from doors._http import Router
from doors.model._config import ModelConfig, config_from_rows
from doors.model._gateway import Gateway, KeySource
from doors.model._upstream import Upstream, UpstreamRequest, UpstreamResponse
from doors.model.server import serve_plain
from doors.model.twin import TwinUpstream
from tests.doors.net.netns import setns_fd

MODEL = "claude-haiku-4-5"


@dataclass
class Audit:
    acts: list[dict[str, Any]] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)

    def calls(self) -> list[dict[str, Any]]:
        return [event for event in self.reports if event["kind"] == "model.call"]


@dataclass
class Served:
    gateway: Gateway
    audit: Audit
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, **options: Any) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.base_url, api_key="sk-client-credential-never-forwarded",
                                   max_retries=0, **options)

    async def run(self, call: Callable[[anthropic.Anthropic], Any]) -> Any:
        """`call` with a fresh SDK client, in a thread (the SDK is synchronous), in the listener's network
        namespace: trio reuses worker threads, and one born while an earlier test (the net door's test
        network) had moved the main thread elsewhere is still there; its 127.0.0.1 is another loopback."""
        here = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)

        def in_thread() -> Any:
            if os.readlink("/proc/thread-self/ns/net") != os.readlink(f"/proc/self/fd/{here}"):
                setns_fd(here)
            with self.client() as client:
                return call(client)
        try:
            return await trio.to_thread.run_sync(in_thread)
        finally:
            os.close(here)


class RecordingUpstream:
    """Wraps an upstream and keeps every request it was sent (headers included) for the test to read."""

    def __init__(self, inner: Upstream) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[UpstreamRequest] = []

    async def exchange(self, request: UpstreamRequest) -> UpstreamResponse:
        self.requests.append(request)
        return await self.inner.exchange(request)

    async def aclose_response(self, response: UpstreamResponse) -> None:
        await self.inner.aclose_response(response)


def twin_config(**rows: Any) -> ModelConfig:
    return config_from_rows({"upstream": "twin", "budget_microusd": 1_000_000, **rows})


@asynccontextmanager
async def served(config: ModelConfig, upstream: Upstream | None = None,
                 key_source: KeySource | None = None) -> AsyncIterator[Served]:
    audit = Audit()
    gateway = Gateway(config, upstream or TwinUpstream(None), key_source, audit.acts.append, audit.reports.append)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_plain, listener, "app", Router("model", gateway.routes()))
        yield Served(gateway, audit, sock.getsockname()[1])
        nursery.cancel_scope.cancel()
