"""The keys door over real mutual TLS (in-process): releases open, refusals name their row, hostile bodies
neither crash it nor hold up another caller, and no response, error or audit event holds the secret."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
import trio
from cryptography.exceptions import InvalidTag

from doors._http import Request, Response, Route, Router, json_response
from doors._refusal import DoorRefused
from doors._transport import AsyncDoorClient
from doors._transport.testing import Session, session
from doors.keys import Binding, OneTimeKey, build, release
from doors.keys._request import RELEASE_PATH

SECRET = b"sk-test-" + os.urandom(12).hex().encode()
OTHER = b"ghp_" + os.urandom(12).hex().encode()
ROWS = {"anthropic": {"roles": ["model"], "hosts": ["api.anthropic.com"]},
        "github": {"roles": ["net", "model"], "hosts": ["api.github.com"], "per_minute": 1000}}


def _fd(value: bytes) -> int:
    fd = os.memfd_create("sharness-test-secret", 0)
    os.write(fd, value + b"\n")
    return fd


class Door:
    def __init__(self, s: Session, address: Any, audit: list[dict[str, Any]]) -> None:
        self.s, self.address, self.audit = s, address, audit

    def client(self, role: str) -> AsyncDoorClient:
        return AsyncDoorClient(self.s.dial("keys", self.address, self.s.client_ctx(role), role))

    def spiffe(self, role: str) -> str:
        return self.s.pki.identity(role).uri()

    def everything_seen(self) -> bytes:
        return json.dumps([self.audit, self.s.events]).encode()


async def _door(s: Session, nursery: trio.Nursery) -> Door:
    audit: list[dict[str, Any]] = []
    rows = {"secrets": ROWS, "secret_fds": {"anthropic": _fd(SECRET), "github": _fd(OTHER)}}
    keys = build(rows, audit.append)
    address = await s.start_door(nursery, "keys", router=Router("keys", keys.routes()))
    return Door(s, address, audit)


async def _started() -> AsyncIterator[Door]:
    async with session() as s, trio.open_nursery() as nursery:
        yield await _door(s, nursery)
        nursery.cancel_scope.cancel()


async def test_allowed_release_opens_and_is_audited_without_the_value() -> None:
    async for door in _started():
        async with door.client("model") as client:
            assert await release(client, door.spiffe("model"), "anthropic", "api.anthropic.com") == SECRET
        async with door.client("net") as client:
            assert await release(client, door.spiffe("net"), "github", "api.github.com") == OTHER
        assert [(e["requester"], e["name"], e["decision"], e["row"]) for e in door.audit] == [
            (door.spiffe("model"), "anthropic", "release", "keys.secrets.anthropic"),
            (door.spiffe("net"), "github", "release", "keys.secrets.github")]
        assert SECRET not in door.everything_seen() and OTHER not in door.everything_seen()


@pytest.mark.parametrize(("role", "name", "host", "row"), [
    ("net", "anthropic", "api.anthropic.com", "keys.secrets.anthropic.roles"),
    ("model", "anthropic", "api.github.com", "keys.secrets.anthropic.hosts"),
    ("model", "openai", "api.openai.com", "keys.secrets"),
])
async def test_refusals_name_the_row(role: str, name: str, host: str, row: str) -> None:
    async for door in _started():
        async with door.client(role) as client:
            with pytest.raises(DoorRefused) as caught:
                await release(client, door.spiffe(role), name, host)
        assert (caught.value.refusal.status, caught.value.refusal.row, caught.value.refusal.who) == (403, row, "keys")
        assert door.audit[-1]["decision"] == "refuse" and door.audit[-1]["row"] == row
        assert SECRET not in str(caught.value).encode()


async def test_app_refused_by_the_edge_check() -> None:
    async for door in _started():
        async with door.client("app") as client:
            with pytest.raises(DoorRefused) as caught:
                await release(client, door.spiffe("app"), "anthropic", "api.anthropic.com")
        assert caught.value.refusal.row == "edges"
        assert door.audit == []  # the release route was never reached


def _body(key: OneTimeKey, request_id: str, issued_at: int) -> dict[str, Any]:
    return {"name": "anthropic", "host": "api.anthropic.com", "request_id": request_id, "issued_at": issued_at,
            "public_key": base64.b64encode(key.public_bytes()).decode()}


async def test_replay_and_reused_key_refused() -> None:
    async for door in _started():
        key = OneTimeKey()
        async with door.client("model") as client:
            now = int(time.time())
            first = await client.request("POST", RELEASE_PATH, json=_body(key, "a" * 16, now))
            assert first.status == 200 and SECRET not in first.body
            replay = await client.request("POST", RELEASE_PATH, json=_body(OneTimeKey(), "a" * 16, now))
            reused = await client.request("POST", RELEASE_PATH, json=_body(key, "b" * 16, now))
            stale = await client.request("POST", RELEASE_PATH, json=_body(OneTimeKey(), "c" * 16, now - 3600))
        assert [r.json()["error"] for r in (replay, reused, stale)] == [
            "keys.request.request_id", "keys.request.public_key", "keys.request.issued_at"]


HOSTILE = [b"", b"{", b"[]", b'{"name": 1}', json.dumps({"name": "anthropic", "extra": 1}).encode(),
           json.dumps({"name": "anthropic", "host": "api.anthropic.com", "request_id": "a" * 16, "issued_at": 1,
                       "public_key": "!!!"}).encode(), b"x" * 100_000]


async def test_hostile_bodies_are_400_or_413_and_do_not_hold_up_another_caller() -> None:
    async for door in _started():
        async with door.client("net") as hostile, door.client("model") as honest:
            for body in HOSTILE:
                response = await hostile.request("POST", RELEASE_PATH, body=body,
                                                 headers=(("content-type", "application/json"),))
                assert response.status in (400, 413), body[:40]
            # A caller that sends half a body and stalls holds only its own connection.
            stalled = await trio.open_unix_socket(door.address)
            await stalled.send_all(b"\x16\x03\x01\x00\xff")
            assert await release(honest, door.spiffe("model"), "anthropic", "api.anthropic.com") == SECRET
            await stalled.aclose()
        assert SECRET not in door.everything_seen()


SECRET_OF = {"anthropic": SECRET, "github": OTHER}
HOSTS_OF = {"anthropic": "api.anthropic.com", "github": "api.github.com"}
MATRIX = [(role, name, host) for role in ("app", "fs", "net", "shell", "model") for name in ("anthropic", "github")
          for host in ("api.anthropic.com", "api.github.com")]


def _expected(role: str, name: str, host: str) -> str | None:
    """The row that refuses, or None for a release."""
    if role not in ("net", "model"):
        return "edges"  # no edge [role, keys]: the transport refuses before any route runs
    if role not in ROWS[name]["roles"]:
        return f"keys.secrets.{name}.roles"
    if host != HOSTS_OF[name]:
        return f"keys.secrets.{name}.hosts"
    return None


async def test_the_role_secret_host_matrix() -> None:
    async for door in _started():
        outcomes = {}
        for role, name, host in MATRIX:
            async with door.client(role) as client:
                try:
                    opened = await release(client, door.spiffe(role), name, host)
                    assert opened == SECRET_OF[name]
                    outcomes[(role, name, host)] = None
                except DoorRefused as refused:
                    assert refused.refusal.status == 403
                    outcomes[(role, name, host)] = refused.refusal.row
        assert outcomes == {case: _expected(*case) for case in MATRIX}
        assert sum(row is None for row in outcomes.values()) == 3  # model×anthropic, net×github, model×github
        releases = [event for event in door.audit if event["decision"] == "release"]
        assert len(releases) == 3 and len(door.audit) == 3 + sum(
            row not in (None, "edges") for row in outcomes.values())
        assert SECRET not in door.everything_seen() and OTHER not in door.everything_seen()


async def _answer_altered(s: Session, nursery: trio.Nursery, alter: Any) -> Door:
    """A keys door whose answers pass through `alter` (what a blob issued for another context looks like)."""
    audit: list[dict[str, Any]] = []
    keys = build({"secrets": ROWS, "secret_fds": {"anthropic": _fd(SECRET), "github": _fd(OTHER)}}, audit.append)

    async def altered(request: Request) -> Response:
        answer = await keys.release(request)
        assert isinstance(answer.body, bytes)
        return json_response(alter(json.loads(answer.body)))

    address = await s.start_door(nursery, "keys", router=Router("keys", [Route("POST", RELEASE_PATH, altered)]))
    return Door(s, address, audit)


@pytest.mark.parametrize(("what", "alter", "raised"), [
    ("another expiry", lambda body: {**body, "expires_at": body["expires_at"] - 1}, InvalidTag),
    ("already expired", lambda body: {**body, "expires_at": int(time.time()) - 1}, DoorRefused),
    ("no blob", lambda body: {"expires_at": body["expires_at"]}, DoorRefused),
])
async def test_the_client_opens_only_what_was_sealed_for_this_request(what: str, alter: Any, raised: type) -> None:
    async with session() as s, trio.open_nursery() as nursery:
        door = await _answer_altered(s, nursery, alter)
        async with door.client("model") as client:
            with pytest.raises(raised):
                await release(client, door.spiffe("model"), "anthropic", "api.anthropic.com")
        nursery.cancel_scope.cancel()


async def test_a_blob_for_another_requester_does_not_open() -> None:
    # The model door's blob, replayed to the net door's key context (as if net had intercepted it).
    async for door in _started():
        key = OneTimeKey()
        async with door.client("model") as client:
            answer = (await client.request("POST", RELEASE_PATH, json=_body(key, "d" * 16, int(time.time())))).json()
        sealed = base64.b64decode(answer["sealed"])
        ours = Binding(door.spiffe("model"), "anthropic", "api.anthropic.com", "d" * 16, answer["expires_at"])
        assert key.open(sealed, ours) == SECRET
        with pytest.raises(InvalidTag):
            key.open(sealed, replace(ours, requester_id=door.spiffe("net")))
