"""Baseline servers, each run in its own process: ``python -m bench._servers '<spec json>'``.

Per connection: handshake, then echo until the client closes; the client's first echoed request is its
proof that the server accepted it. The server prints ``ready <address>`` once it listens.
"""

from __future__ import annotations

import json
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import h11
import trio
from OpenSSL import SSL

from bench._certs import CertFiles
from bench._tls import TlsOptions, pyopenssl_context, stdlib_context


@dataclass(frozen=True)
class ServerSpec:
    """Which baseline server to run, where, with which certificates and TLS options."""

    kind: str  # "stdlib" | "pyopenssl" | "trio" | "h11"
    address: str  # a Unix socket path, or "tcp:<port>" on 127.0.0.1
    cert: str
    key: str
    bundle: str
    options: dict[str, object] = field(default_factory=dict)

    def files(self) -> CertFiles:
        return CertFiles(Path(self.cert), Path(self.key), Path(self.bundle))

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def listen(address: str) -> socket.socket:
    """A listening socket for a Unix path or ``tcp:<port>`` on loopback."""
    if address.startswith("tcp:"):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", int(address[4:])))
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(address)
    sock.listen(512)
    return sock


def accept(sock: socket.socket) -> socket.socket:
    """Accept one connection; TCP gets TCP_NODELAY (else Nagle + delayed ACK add 40 ms per round trip)."""
    conn, _ = sock.accept()
    if conn.family == socket.AF_INET:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def _echo_blocking(conn: socket.socket | SSL.Connection) -> None:
    while True:
        try:
            data = conn.recv(65536)
        except (SSL.ZeroReturnError, SSL.SysCallError, OSError):
            return
        if not data:
            return
        conn.sendall(data)


def serve_stdlib(spec: ServerSpec, sock: socket.socket,
                 answer: Callable[[ssl.SSLSocket], None] = _echo_blocking) -> None:
    """Blocking stdlib ssl, one connection at a time, each answered by `answer` (an echo by default)."""
    ctx = stdlib_context(spec.files(), True, TlsOptions(**spec.options))  # type: ignore[arg-type]
    while True:
        raw = accept(sock)
        try:
            with ctx.wrap_socket(raw, server_side=True) as conn:
                answer(conn)
        except (OSError, ssl.SSLError, h11.ProtocolError):
            raw.close()


def serve_pyopenssl(spec: ServerSpec, sock: socket.socket) -> None:
    """Blocking pyOpenSSL (its bundled OpenSSL), one connection at a time."""
    ctx = pyopenssl_context(spec.files(), True, TlsOptions(**spec.options))  # type: ignore[arg-type]
    while True:
        raw = accept(sock)
        conn = SSL.Connection(ctx, raw)
        conn.set_accept_state()
        try:
            conn.do_handshake()
            _echo_blocking(conn)
        except (SSL.Error, OSError):
            pass
        finally:
            raw.close()


HELLO_BODY = b'{"door": "bench", "role": "fs", "peer": "spiffe://bench.test/app", "version": "0"}\n'
HELLO_HEADERS = [("content-type", "application/json"), ("content-length", str(len(HELLO_BODY)))]


def _answer_http(conn: ssl.SSLSocket) -> None:
    """h11 on a blocking TLS socket, nothing else: each request answered 200 with a hello-sized JSON body."""
    http = h11.Connection(h11.SERVER)
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            http.receive_data(conn.recv(65536))
        elif isinstance(event, h11.EndOfMessage):
            conn.sendall(http.send(h11.Response(status_code=200, headers=HELLO_HEADERS))
                         + http.send(h11.Data(data=HELLO_BODY)) + http.send(h11.EndOfMessage()))
            http.start_next_cycle()
        elif isinstance(event, h11.ConnectionClosed):
            return


async def _trio_connection(stream: trio.SocketStream, ctx: ssl.SSLContext) -> None:
    tls = trio.SSLStream(stream, ctx, server_side=True)
    try:
        await tls.do_handshake()
        while data := await tls.receive_some(65536):
            await tls.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await trio.aclose_forcefully(stream)


async def serve_trio(spec: ServerSpec, sock: socket.socket) -> None:
    """The naive trio pair: trio.SSLStream over stdlib ssl, one task per connection."""
    ctx = stdlib_context(spec.files(), True, TlsOptions(**spec.options))  # type: ignore[arg-type]
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))

    async def handler(stream: trio.SocketStream) -> None:
        await _trio_connection(stream, ctx)

    await trio.serve_listeners(handler, [listener])


def main(argv: list[str]) -> None:
    spec = ServerSpec(**json.loads(argv[0]))
    sock = listen(spec.address)
    print("ready", sock.getsockname()[1] if spec.address.startswith("tcp:") else spec.address, flush=True)
    if spec.kind == "stdlib":
        serve_stdlib(spec, sock)
    elif spec.kind == "pyopenssl":
        serve_pyopenssl(spec, sock)
    elif spec.kind == "h11":
        serve_stdlib(spec, sock, _answer_http)  # the kept-alive floor of the doors' framing: no door logic
    elif spec.kind == "trio":
        trio.run(serve_trio, spec, sock)
    else:
        raise SystemExit(f"bench._servers: unknown server kind {spec.kind!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
