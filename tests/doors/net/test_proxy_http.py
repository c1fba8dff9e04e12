"""Plain-HTTP forwarding on the test network: authority decides, Host rewritten, framing attacks 400."""

from __future__ import annotations

import json
import select
import socket
import struct

import pytest
import trio
import trio.testing

from .client import http
from .conftest import TestNet
from .test_proxy_connect import wait_for_audit

pytestmark = pytest.mark.root


def get(target: str, *extra: str, host: str = "plain.sharness.test") -> bytes:
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}", *extra, "", ""]
    return "\r\n".join(lines).encode()


async def one(net: TestNet, raw: bytes, port: int | None = None) -> tuple[int, dict[str, str], bytes]:
    stream = await net.client(port)
    [reply] = await http(stream, raw)
    await stream.aclose()
    assert reply is not None
    return reply.status, reply.headers, reply.body


async def test_forward_rewrites_host_and_strips_hop_by_hop(net: TestNet) -> None:
    raw = get("http://plain.sharness.test/x?q=secret-token", "Proxy-Authorization: Basic c2VjcmV0",
              "Connection: close, X-Private-Hop", "X-Private-Hop: 1", "Keep-Alive: 5", "Accept: */*",
              host="private.sharness.test")
    status, headers, body = await one(net, raw)
    assert status == 200
    seen = json.loads(body)
    assert seen["server"] == "public-http" and seen["target"] == "/x?q=secret-token"
    assert seen["host"] == "plain.sharness.test"  # from the URI authority, not the client's Host
    assert seen["header_names"] == ["accept", "connection", "host"]
    assert "x-hop" not in headers  # the upstream's own hop-by-hop field stays upstream
    await wait_for_audit(net, 1)
    line = json.dumps(net.audit[0])
    assert "secret-token" not in line and "c2VjcmV0" not in line and "/x" not in line
    assert net.audit[0]["requested"] == "http://plain.sharness.test"


@pytest.mark.parametrize(
    ("target", "status", "refusal"),
    [
        ("http://evil.sharness.test/", 403, "not-allowlisted; row=doors.net.allow"),
        ("http://plain.sharness.test:8080/", 403, "not-allowlisted; row=doors.net.allow"),
        ("http://private.sharness.test/", 403, "private; row=doors.net.public_addresses"),
        ("http://10.77.0.2/", 403, "private; row=doors.net.public_addresses"),
        ("http://2130706433/", 403, "non-canonical-number; row=doors.net.allow"),
        ("http://user@plain.sharness.test/", 400, "userinfo; row=doors.net.framing"),
        ("https://ok.sharness.test/", 400, "not-absolute-form; row=doors.net.framing"),
        ("/relative", 400, "not-absolute-form; row=doors.net.framing"),
    ],
)
async def test_forward_refusals(net: TestNet, target: str, status: int, refusal: str) -> None:
    got, headers, _ = await one(net, get(target, host="plain.sharness.test"))
    assert (got, headers.get("x-sharness-refusal")) == (status, refusal)
    assert net.logs["private-http"].connections == 0 and net.logs["public-http"].requests == []


async def test_redirect_is_passed_back_not_followed(net: TestNet) -> None:
    status, headers, _ = await one(net, get("http://redirect.sharness.test/redirect"))
    assert status == 302 and headers["location"] == "http://private.sharness.test/"
    await wait_for_audit(net, 1)
    assert len(net.audit) == 1 and net.logs["private-http"].connections == 0


async def test_pipelined_request_to_a_refused_host_is_not_forwarded(net: TestNet) -> None:
    stream = await net.client()
    raw = (get("http://plain.sharness.test/one") + get("http://private.sharness.test/two")
           + get("http://evil.sharness.test/three") + get("http://plain.sharness.test/four"))
    replies = await http(stream, raw, 4)
    await stream.aclose()
    assert [r.status for r in replies if r] == [200, 403, 403, 200]
    assert [r["target"] for r in net.logs["public-http"].requests] == ["/one", "/four"]
    assert net.logs["private-http"].connections == 0
    assert net.logs["public-http"].connections == 2  # a fresh upstream connection per request


async def test_keep_alive_never_reuses_upstream(net: TestNet) -> None:
    stream = await net.client()
    for _ in range(3):
        [reply] = await http(stream, get("http://plain.sharness.test/k"))
        assert reply is not None and reply.status == 200
    await stream.aclose()
    assert net.logs["public-http"].connections == 3


async def test_chunked_request_and_response(net: TestNet) -> None:
    raw = (b"POST http://plain.sharness.test/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    status, _, body = await one(net, raw)
    assert status == 200 and json.loads(body)["body_len"] == 11


async def test_big_response_streams(net: TestNet) -> None:
    status, _, body = await one(net, get("http://plain.sharness.test/big/1000000"))
    assert status == 200 and len(body) == 1_000_000
    await wait_for_audit(net, 1)
    assert net.audit[0]["bytes_down"] > 1_000_000


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"POST http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://private.sharness.test/ HTTP/1.1\r\n\r\n", "cl-and-te"),
        (b"POST http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n"
         b"hello", "duplicate-content-length"),
        (b"GET http://plain.sharness.test/ HTTP/1.1\nHost: x\n\n", "bare-lf"),
        (b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", "obs-fold"),
        (b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", "control-char"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "control-char"),
    ],
)
async def test_framing_attacks_400(net: TestNet, raw: bytes, reason: str) -> None:
    status, headers, _ = await one(net, raw)
    assert status == 400 and headers["x-sharness-refusal"] == f"{reason}; row=doors.net.framing"
    assert headers["connection"] == "close"
    assert net.logs["public-http"].connections == 0


@pytest.mark.parametrize("body", [b"zz\r\nhello\r\n0\r\n\r\n", b"5\r\nhelloXX0\r\n\r\n", b"5\nhello\r\n0\r\n\r\n"])
async def test_bad_chunking_400(net: TestNet, body: bytes) -> None:
    raw = b"POST http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    status, headers, _ = await one(net, raw)
    assert status == 400 and headers["x-sharness-refusal"] == "bad-body-framing; row=doors.net.framing"
    assert net.logs["public-http"].requests == []  # the upstream never saw a whole request


async def test_role_of_the_listener_applies(net: TestNet) -> None:
    _, port = await net.start_proxy(role="shell")
    status, headers, _ = await one(net, get("http://plain.sharness.test/"), port)
    assert status == 403 and headers["x-sharness-refusal"].startswith("not-allowlisted")


async def test_limit_429_for_plain_http(net: TestNet) -> None:
    _, port = await net.start_proxy(max_tunnels=1)
    tunnel = await net.client(port)
    await tunnel.send_all(b"CONNECT raw.sharness.test:7 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (await tunnel.receive_some(1000)).startswith(b"HTTP/1.1 200")
    status, headers, _ = await one(net, get("http://plain.sharness.test/"), port)
    assert status == 429 and headers["retry-after"] == "1"
    await tunnel.aclose()


async def test_stalled_head_closed_without_audit(net: TestNet) -> None:
    _, port = await net.start_proxy(head_timeout_s=0.2)
    stream = await net.client(port)
    await stream.send_all(b"GET http://plain.sharness.test/ HTTP/1.1\r\nHost: x\r\n")
    assert await stream.receive_some(100) == b""
    await trio.sleep(0.05)
    assert net.audit == []


async def test_expect_100_continue_answered_by_the_door(net: TestNet) -> None:
    stream = await net.client()
    await stream.send_all(b"POST http://plain.sharness.test/e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                          b"Expect: 100-continue\r\n\r\n")
    interim = b""
    while b"\r\n\r\n" not in interim:
        interim += await stream.receive_some(1)
    assert interim.startswith(b"HTTP/1.1 100 ")
    [reply] = await http(stream, b"hello")
    assert reply is not None and reply.status == 200 and reply.json()["body_len"] == 5


async def test_client_gone_before_the_answer_does_not_stop_the_door(net: TestNet) -> None:
    for _ in range(3):
        stream = await net.client()
        await stream.send_all(b"CONNECT raw.sharness.test:7 HTTP/1.1\r\nHost: x\r\n\r\n")
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await stream.aclose()  # RST, maybe before the proxy answers
    status, _, _ = await one(net, get("http://plain.sharness.test/still-here"))
    assert status == 200


async def test_connections_beyond_the_cap_wait_in_the_backlog(net: TestNet) -> None:
    _, port = await net.start_proxy(max_connections=1)
    first = await net.client(port)
    second = await net.client(port)  # the kernel completes the handshake; the proxy does not accept yet
    await second.send_all(get("http://plain.sharness.test/second", "Connection: close"))
    await trio.testing.wait_all_tasks_blocked()
    readable, _, _ = select.select([second.socket.fileno()], [], [], 0)
    assert readable == [], "served beyond max_connections"
    await first.aclose()
    [reply] = await http(second, b"")
    assert reply is not None and reply.status == 200
