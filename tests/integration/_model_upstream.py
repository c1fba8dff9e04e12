"""A test upstream for the model door: the twin behind HTTPS with a trustme CA, on this machine's own
non-loopback address, recording every request it was sent (headers included) for the test to read."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import trio
import trustme

from doors.model._upstream import Headers, UpstreamRequest
from doors.model.twin import Answer, Twin, TwinUpstream
from doors.model.twin._server import ServerLimits, serve_connection


class _RecordingTwin(Twin):
    """The twin, keeping (method, path, headers) of every request it answers."""

    def __init__(self, seen: list[UpstreamRequest]) -> None:
        super().__init__(None)
        self.seen = seen

    def answer(self, method: bytes, path: bytes, headers: Headers, body: bytes) -> Answer:
        self.seen.append(UpstreamRequest(method, path, tuple(headers), body))
        return super().answer(method, path, headers, body)


@dataclass
class HttpsTwin:
    host: str
    address: str
    port: int
    ca_pem: Path
    seen: list[UpstreamRequest] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"


def own_address() -> str:
    """This machine's address on its default route (never loopback: the door never dials that)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.254", 9))  # no packet is sent: this only picks the route's source address
        return str(probe.getsockname()[0])


@contextmanager
def hosts_entry(address: str, host: str) -> Iterator[None]:
    """`host` resolving to `address` through /etc/hosts while the block runs; the line removed after."""
    line = f"{address} {host}  # sharness model-door test\n"
    with open("/etc/hosts", "a") as hosts:
        hosts.write(line)
    try:
        yield
    finally:
        text = Path("/etc/hosts").read_text()
        with open("/etc/hosts", "w") as hosts:  # in place: a bind of the file elsewhere keeps its inode
            hosts.write(text.replace(line, ""))


@contextmanager
def https_twin(directory: Path, host: str) -> Iterator[HttpsTwin]:
    """The HTTPS twin listening on this machine's address; its CA's PEM written under `directory`."""
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(server_ctx)
    ca_pem = directory / "upstream-ca.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    ca_pem.chmod(0o644)
    address = own_address()
    sock = socket.socket()
    sock.bind((address, 0))
    sock.listen(64)
    upstream = HttpsTwin(host, address, sock.getsockname()[1], ca_pem)
    recording = TwinUpstream(None)
    recording.twin = _RecordingTwin(upstream.seen)
    ready = threading.Event()
    state: dict[str, object] = {}

    async def serve() -> None:
        sock.setblocking(False)
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))

        async def one(stream: trio.SocketStream) -> None:
            tls = trio.SSLStream(stream, server_ctx, server_side=True)
            with suppress(trio.BrokenResourceError, ssl.SSLError, OSError):
                await serve_connection(tls, recording, ServerLimits())

        with trio.CancelScope() as scope:
            state["scope"], state["token"] = scope, trio.lowlevel.current_trio_token()
            ready.set()
            await trio.serve_listeners(one, [listener])

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    ready.wait()
    try:
        yield upstream
    finally:
        scope = state["scope"]
        assert isinstance(scope, trio.CancelScope)
        trio.from_thread.run_sync(scope.cancel, trio_token=state["token"])  # type: ignore[arg-type]
        thread.join(10)
