"""Fixtures for the fs door: a scratch workspace and the door's API served over an in-memory stream."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing

from doors._http import ClientConnection, ClientResponse, Limits, Router, serve_http
from doors.fs import FsApi, build

LIMITS = Limits(idle_timeout_s=5, head_timeout_s=5, body_grace_s=5, body_min_bytes_per_s=1024)


@pytest.fixture
def workspace() -> Iterator[str]:
    """A scratch workspace, removed even when the test fails."""
    path = tempfile.mkdtemp(prefix="sharness-fs-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class Door:
    """The fs door over a workspace, with the audit events it emitted."""

    root: str
    api: FsApi
    events: list[dict[str, Any]] = field(default_factory=list)
    role: str = "app"

    def close(self) -> None:
        os.close(self.api.workspace.root_fd)

    async def request(self, method: str, target: str, body: bytes = b"",
                      headers: tuple[tuple[str, str], ...] = ()) -> ClientResponse:
        """One request on a fresh in-memory connection to the door."""
        client_end, server_end = trio.testing.memory_stream_pair()
        conn = ClientConnection("fs")
        router = Router("fs", self.api.routes())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: serve_http(server_end, router, LIMITS, peer_role=self.role))
            await client_end.send_all(conn.request_bytes(method, target, body, headers))
            while (response := conn.next_response()) is None:
                conn.receive_data(await client_end.receive_some(65536))
            await client_end.aclose()
        return response


def make_door(root: str, rows: dict[str, Any] | None = None) -> Door:
    """Build the door over `root` with `rows`; events go to door.events."""
    events: list[dict[str, Any]] = []
    api = build({"workspace": root, **(rows or {})}, events.append)
    return Door(root, api, events)


@pytest.fixture
def door_factory(workspace: str) -> Iterator[Any]:
    doors: list[Door] = []

    def factory(rows: dict[str, Any] | None = None) -> Door:
        door = make_door(workspace, rows)
        doors.append(door)
        return door

    try:
        yield factory
    finally:
        for door in doors:
            door.close()
