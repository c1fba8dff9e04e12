"""Hostile HTTP from inside the session: the app, with its own valid SVID, sends the fs door bad requests.

Each case prints `{"probe": "http.<case>", "status": N or null, "after": N}`: the status the door answered
(null when it only closed) and the status of a clean `GET /v0/hello` on a fresh connection right after,
which shows the door still answers. Run by attack_app.py as its own process; standard library + doors.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import threading
import time
from typing import Any

from pki.bundle import load_bundle_into_context, load_file_into_context

ENV = os.environ
HELLO = b"GET /v0/hello HTTP/1.1\r\nhost: fs\r\nconnection: close\r\n\r\n"
FLOOD = 300  # raw connections, more than the door's 256


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def _context() -> ssl.SSLContext:
    """The stdlib's TLS 1.3 client with the app's SVID, whatever backend the doors' own clients use: the raw
    bytes of each case go through an ssl.SSLSocket."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    with open(ENV["SHARNESS_BUNDLE"], "rb") as bundle:
        load_bundle_into_context(ctx, bundle.read())
    load_file_into_context(ctx, ENV["SHARNESS_SVID"])
    return ctx


CTX = _context()


def _raw() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(ENV["SHARNESS_DOOR_FS"])
    return sock


def tls(ctx: ssl.SSLContext = CTX) -> ssl.SSLSocket:
    return ctx.wrap_socket(_raw(), server_side=False)


def read_answer(sock: socket.socket) -> tuple[int | None, bytes]:
    """Read until the door closes (or 20 s): the first status line's code and everything after it."""
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
            if b"\r\n\r\n" in got and b"content-length: " in got.lower():
                head, _, body = got.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                if len(body) >= length:
                    break
    except (OSError, ssl.SSLError):
        pass
    if not got.startswith(b"HTTP/1."):
        return None, got
    return int(got.split(b" ", 2)[1]), got


def send(payload: bytes | list[bytes], pause_s: float = 0.0) -> tuple[int | None, bytes]:
    with tls() as sock:
        for piece in payload if isinstance(payload, list) else [payload]:
            sock.sendall(piece)
            time.sleep(pause_s)
        return read_answer(sock)


def hello_status() -> int | None:
    try:
        return send(HELLO)[0]
    except (OSError, ssl.SSLError):
        return None


def case(name: str, payload: bytes | list[bytes], **extra: Any) -> None:
    started = time.monotonic()
    try:
        status, body = send(payload)
    except (OSError, ssl.SSLError) as exc:
        status, body = None, repr(exc).encode()
    took_ms = round((time.monotonic() - started) * 1000)
    leaked = b"root:" in body
    report(f"http.{name}", status=status, after=hello_status(), leaked=leaked, ms=took_ms, **extra)


def request(method: str, target: str, *headers: str, body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "host: fs", "connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


TRAVERSALS = (
    "..%2f..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/%2e%2e/etc/passwd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "..%5c..%5cetc%5cpasswd", "%2fetc%2fpasswd", "%252e%252e%252fetc%252fpasswd", "%c0%ae%c0%ae/etc/passwd",
    "a%00/../../etc/passwd", "link_out", "dir_out/passwd", "./../etc/passwd", "%2e/%2e%2e/etc/passwd",
)


def framing_cases() -> None:
    case("huge_header", request("GET", "/v0/hello", "x-a: " + "a" * 20000))
    case("many_headers", request("GET", "/v0/hello", *[f"x-{i}: {i}" for i in range(200)]))
    case("huge_target", request("GET", "/v0/fs/files/" + "a" * 5000))
    smuggled = b"0\r\n\r\nPUT /v0/fs/files/smuggled.txt HTTP/1.1\r\nhost: fs\r\ncontent-length: 1\r\n\r\nx"
    case("cl_te", request("PUT", "/v0/fs/files/clte.txt", "content-length: 5", "transfer-encoding: chunked",
                          body=smuggled))
    case("te_cl", request("PUT", "/v0/fs/files/tecl.txt", "transfer-encoding: chunked", "content-length: 5",
                          body=smuggled))
    case("two_lengths", request("PUT", "/v0/fs/files/twocl.txt", "content-length: 1", "content-length: 2",
                                body=b"xy"))
    case("bad_chunk", request("PUT", "/v0/fs/files/chunk.txt", "transfer-encoding: chunked", body=b"zz\r\nx\r\n"))
    case("negative_length", request("PUT", "/v0/fs/files/neg.txt", "content-length: -1"))
    case("nul_in_header", request("GET", "/v0/hello", "x-a: a\0b"))
    case("absolute_form", request("GET", "http://keys/v0/hello"))
    case("connect_method", request("CONNECT", "keys:443"))
    case("obs_fold", b"GET /v0/hello HTTP/1.1\r\nhost: fs\r\nx-a: a\r\n b\r\n\r\n")
    case("bare_lf", b"GET /v0/hello HTTP/1.1\nhost: fs\n\n")
    case("http09", b"GET /v0/hello\r\n\r\n")
    case("garbage", os.urandom(4096) + b"\r\n\r\n")


def traversal_cases() -> None:
    for index, path in enumerate(TRAVERSALS):
        case(f"traversal.{index}", request("GET", f"/v0/fs/files/{path}"), path=path)
    case("traversal.put", request("PUT", "/v0/fs/files/..%2fescaped.txt", "content-length: 1", body=b"x"))


def transport_cases() -> None:
    """Not HTTP at all: plaintext on the TLS socket, TLS 1.2 only, a flood of idle connections."""
    with _raw() as sock:
        sock.sendall(HELLO)
        status, got = read_answer(sock)
    report("http.plaintext", status=status, got_bytes=len(got), after=hello_status())
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        with tls(old):
            outcome = "handshake completed"
    except ssl.SSLError as exc:
        outcome = exc.reason or str(exc)
    report("http.tls12", outcome=outcome, after=hello_status())
    flood: list[socket.socket] = []
    busy = 0
    deadline = time.monotonic() + 10
    try:
        while len(flood) < FLOOD and time.monotonic() < deadline:
            try:
                flood.append(_raw())
            except BlockingIOError:  # the listen backlog is full until the door accepts (and refuses) more
                busy += 1
                time.sleep(0.005)
        report("http.flood", opened=len(flood), backlog_full=busy, during=hello_status())
    finally:
        for sock in flood:
            sock.close()
    time.sleep(0.5)  # not a threshold: the door notices the closes; `after` is retried below until it answers
    after = None
    for _ in range(40):
        if (after := hello_status()) == 200:
            break
        time.sleep(0.25)
    report("http.flood_after", after=after)


def slow_cases() -> list[threading.Thread]:
    """A body that trickles and a head that never ends, each held in a thread while the other cases run."""
    def slow_body() -> None:
        status, _ = send([request("PUT", "/v0/fs/files/slow.txt", "content-length: 100000"), b"x" * 10])
        report("http.slow_body", status=status, after=hello_status())

    def slow_head() -> None:
        started = time.monotonic()
        with tls() as sock:
            sock.settimeout(60)  # longer than any door timeout: the door, not this client, ends the wait
            sock.sendall(b"GET /v0/hello HTTP/1.1\r\nhost: fs\r\nx-slow: ")
            status, answer = read_answer(sock)
        error = json.loads(answer.partition(b"\r\n\r\n")[2] or b"{}").get("error") if status else None
        report("http.slow_head", status=status, error=error, ms=round((time.monotonic() - started) * 1000),
               after=hello_status())

    threads = [threading.Thread(target=slow_body), threading.Thread(target=slow_head)]
    for thread in threads:
        thread.start()
    return threads


def main() -> None:
    slow = slow_cases()
    framing_cases()
    traversal_cases()
    report("http.while_slow_held", status=hello_status())
    transport_cases()
    for thread in slow:
        thread.join()
    report("http.final_hello", status=hello_status())


if __name__ == "__main__":
    main()
