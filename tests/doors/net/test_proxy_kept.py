"""Plain HTTP carrying a kept secret (the keys door's fingerprint): refused to a host the secret is not bound to,
naming the row that keeps it, in the target, a header or the body (split across sends); forwarded to a bound one."""

from __future__ import annotations

import json
import random

import pytest
import trio

from doors import SecretMatcher, fingerprint_of
from doors.net import _forward

from .client import http, read_reply
from .conftest import TestNet
from .test_proxy_connect import wait_for_audit

_RNG = random.Random(9)
SECRET = bytes(_RNG.choice(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(48))
REFUSED = "kept-secret; row=doors.keys.secrets.db.hosts"


def matcher(bound_to: str = "db.sharness.test") -> SecretMatcher:
    return SecretMatcher(fingerprint_of({"db": SECRET}, {"db": [bound_to]}))


def get(target: bytes, *extra: bytes) -> bytes:
    return b"\r\n".join([b"GET " + target + b" HTTP/1.1", b"Host: x", *extra, b"", b""])


def test_the_body_guard_never_releases_a_block_of_the_secret() -> None:
    body = b"a" * 40 + SECRET + b"b" * 40
    for size in (1, 7, 15, 16, 17, 64):
        guard, released = _forward._BodyGuard(matcher(), "plain.sharness.test"), b""
        with pytest.raises(_forward._Failed) as failed:
            for at in range(0, len(body), size):
                released += guard.release(body[at : at + size])
        assert SECRET[:16] not in released and released == body[: len(released)]
        assert failed.value.verdict.refusal.row == "doors.keys.secrets.db.hosts"


def test_the_body_guard_releases_everything_of_a_clean_body() -> None:
    guard = _forward._BodyGuard(matcher(), "plain.sharness.test")
    body = bytes(range(256)) * 10
    assert guard.release(body[:1000]) + guard.release(body[1000:]) + guard.rest() == body


root = pytest.mark.root


@root
@pytest.mark.parametrize("raw", [
    get(b"http://plain.sharness.test/?k=" + SECRET),
    get(b"http://plain.sharness.test/", b"Authorization: Bearer " + SECRET),
    get(b"http://plain.sharness.test/", b"X-Note: " + SECRET[10:41]),  # a run of 31 bytes of it
])
async def test_a_head_carrying_it_to_another_host_is_refused_before_any_dial(net: TestNet, raw: bytes) -> None:
    _, port = await net.start_proxy(kept_secrets=matcher())
    stream = await net.client(port)
    [reply] = await http(stream, raw)
    assert reply is not None and (reply.status, reply.refusal) == (403, REFUSED)
    assert "doors.keys.secrets.db" in reply.json()["detail"] and SECRET.decode() not in json.dumps(reply.json())
    assert net.logs["public-http"].connections == 0
    await wait_for_audit(net, 1)
    assert net.audit[-1]["row"] == "doors.keys.secrets.db.hosts" and net.opened == []


@root
async def test_a_body_carrying_it_split_across_sends_is_refused_and_upstream_never_gets_the_request(
        net: TestNet) -> None:
    _, port = await net.start_proxy(kept_secrets=matcher())
    stream = await net.client(port)
    body = b"x" * 100 + SECRET + b"y" * 100
    head = f"POST http://plain.sharness.test/p HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    await stream.send_all(head + body[:110])
    await trio.sleep(0)  # two sends: the secret crosses them
    await stream.send_all(body[110:])
    reply, _ = await read_reply(stream)
    assert reply is not None and (reply.status, reply.refusal) == (403, REFUSED)
    assert net.logs["public-http"].requests == []


@root
@pytest.mark.parametrize("bound", [True, False])
async def test_to_a_bound_host_or_without_the_fingerprint_it_is_forwarded(net: TestNet, bound: bool) -> None:
    _, port = await net.start_proxy(kept_secrets=matcher("plain.sharness.test") if bound else None)
    stream = await net.client(port)
    body = b"token=" + SECRET
    raw = (f"POST http://plain.sharness.test/?k={SECRET.decode()} HTTP/1.1\r\nHost: x\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    [reply] = await http(stream, raw)
    assert reply is not None and reply.status == 200 and reply.json()["body_len"] == len(body)
