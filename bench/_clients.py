"""Blocking measurement loops for the baseline pairs: fresh connections and kept-alive round trips.

A fresh connection is timed from connect() to the echo of its first request: TLS 1.3 tells a client
that the server refused its certificate only when it reads, so that first exchange is part of it.
"""

from __future__ import annotations

import socket
import ssl
import time

from OpenSSL import SSL

from doors import ClientConnection

REQUEST = b"x" * 64


def connect(address: str) -> socket.socket:
    """A connected plain socket to a Unix path or ``tcp:<port>`` on loopback."""
    if address.startswith("tcp:"):
        sock = socket.create_connection(("127.0.0.1", int(address[4:])))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address)
    return sock


def round_trip(tls: ssl.SSLSocket | SSL.Connection) -> None:
    """Send REQUEST and read its echo in full."""
    tls.sendall(REQUEST)
    received = 0
    while received < len(REQUEST):
        chunk = tls.recv(len(REQUEST) - received)
        if not chunk:
            raise RuntimeError("bench: the server closed the connection instead of answering")
        received += len(chunk)


def fresh_stdlib(address: str, ctx: ssl.SSLContext, count: int, resume: bool = False) -> list[float]:
    """Milliseconds per connect + TLS handshake + first round trip, ``count`` times."""
    samples: list[float] = []
    session: ssl.SSLSession | None = None
    for _ in range(count):
        start = time.perf_counter_ns()
        with ctx.wrap_socket(connect(address), session=session) as tls:
            round_trip(tls)
            samples.append((time.perf_counter_ns() - start) / 1e6)
            if resume and session is None:
                session = tls.session  # read once (it costs ~0.2 ms); the ticket arrived before the echo
    return samples


def fresh_pyopenssl(address: str, ctx: SSL.Context, count: int, resume: bool = False) -> list[float]:
    """The same loop on pyOpenSSL."""
    samples: list[float] = []
    session: SSL.Session | None = None
    for _ in range(count):
        start = time.perf_counter_ns()
        sock = connect(address)
        tls = SSL.Connection(ctx, sock)
        if session is not None:
            tls.set_session(session)
        tls.set_connect_state()
        tls.do_handshake()
        round_trip(tls)
        samples.append((time.perf_counter_ns() - start) / 1e6)
        if resume and session is None:
            session = tls.get_session()
        tls.shutdown()  # close_notify: without it OpenSSL marks the session not resumable when freed
        sock.close()
    return samples


def warm_round_trips(tls: ssl.SSLSocket | SSL.Connection, count: int) -> list[float]:
    """Milliseconds per request echoed back on one kept-alive connection."""
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter_ns()
        round_trip(tls)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def warm_stdlib(address: str, ctx: ssl.SSLContext, count: int) -> list[float]:
    """Kept-alive round trips over one stdlib connection."""
    with ctx.wrap_socket(connect(address)) as tls:
        return warm_round_trips(tls, count)


def warm_pyopenssl(address: str, ctx: SSL.Context, count: int) -> list[float]:
    """Kept-alive round trips over one pyOpenSSL connection."""
    sock = connect(address)
    tls = SSL.Connection(ctx, sock)
    tls.set_connect_state()
    tls.do_handshake()
    try:
        return warm_round_trips(tls, count)
    finally:
        sock.close()


def http_get(tls: ssl.SSLSocket, http: ClientConnection, target: str = "/v0/hello") -> None:
    """One GET on ``tls`` framed by the project's sans-IO client connection; fail unless 200."""
    tls.sendall(http.request_bytes("GET", target))
    while (response := http.next_response()) is None:
        http.receive_data(tls.recv(65536))
    if response.status != 200:
        raise RuntimeError(f"bench: the door answered {response.status}: {response.body[:200]!r}")
    http.next_cycle()


def fresh_http(address: str, ctx: ssl.SSLContext, count: int, resume: bool = False) -> list[float]:
    """Blocking stdlib client against a door: connect + handshake + GET /v0/hello, ``count`` times."""
    samples: list[float] = []
    session: ssl.SSLSession | None = None
    for _ in range(count):
        start = time.perf_counter_ns()
        with ctx.wrap_socket(connect(address), session=session) as tls:
            http_get(tls, ClientConnection("door"))
            samples.append((time.perf_counter_ns() - start) / 1e6)
            if resume and session is None:
                session = tls.session  # read once, reuse the one ticket on every later connection
    return samples


def warm_http(address: str, ctx: ssl.SSLContext, count: int) -> list[float]:
    """Blocking stdlib client: GET /v0/hello again and again on one kept-alive connection."""
    samples: list[float] = []
    with ctx.wrap_socket(connect(address)) as tls:
        http = ClientConnection("door")
        for _ in range(count):
            start = time.perf_counter_ns()
            http_get(tls, http)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def fresh_http_pyopenssl(address: str, ctx: SSL.Context, count: int, resume: bool = False) -> list[float]:
    """A blocking pyOpenSSL client against a door: connect + handshake + GET /v0/hello, ``count`` times."""
    samples: list[float] = []
    session: SSL.Session | None = None
    for _ in range(count):
        start = time.perf_counter_ns()
        sock = connect(address)
        tls = SSL.Connection(ctx, sock)
        if session is not None:
            tls.set_session(session)
        tls.set_connect_state()
        tls.do_handshake()
        http = ClientConnection("door")
        tls.sendall(http.request_bytes("GET", "/v0/hello"))
        while (response := http.next_response()) is None:
            http.receive_data(tls.recv(65536))
        if response.status != 200:
            raise RuntimeError(f"bench: the door answered {response.status}: {response.body[:200]!r}")
        samples.append((time.perf_counter_ns() - start) / 1e6)
        if resume and session is None:
            session = tls.get_session()
        tls.shutdown()
        sock.close()
    return samples
