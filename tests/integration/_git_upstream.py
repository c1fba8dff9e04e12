"""The test git server (tests/doors/net/git_server.py), in a thread, with a trustme CA whose PEM the manifest
names as doors.net.ca_bundle. It listens in a network namespace of its own behind a veth pair from the host's
(10.250.N.2, the host side 10.250.N.1): the net door refuses this host's own addresses whatever a row says, so
the server must be another host to it, as an internal git server would be."""

from __future__ import annotations

import secrets
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trio
import trustme

from tests.doors.net import netns
from tests.doors.net.git_server import GitLog, GitServer, make_repository, serve_git


@dataclass
class GitUpstream:
    host: str
    address: str
    port: int
    ca_pem: Path
    root: Path
    log: GitLog

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"


@contextmanager
def peer_namespace() -> Iterator[tuple[str, str]]:
    """(netns name, its address): a namespace joined to the host's by a veth pair; removed whatever happens."""
    tag = secrets.token_hex(3)
    name, octet = f"sh-test-inj-{tag}", 1 + int(tag, 16) % 250
    host_dev, peer_dev = f"sh-ti{tag}h", f"sh-ti{tag}p"
    try:
        netns.add(name)
        netns.ip("link", "add", host_dev, "type", "veth", "peer", "name", peer_dev, "netns", name)
        netns.ip("addr", "add", f"10.250.{octet}.1/24", "dev", host_dev)
        netns.ip("link", "set", host_dev, "up")
        netns.ip("-n", name, "addr", "add", f"10.250.{octet}.2/24", "dev", peer_dev)
        netns.ip("-n", name, "link", "set", peer_dev, "up")
        netns.wait_up(name, peer_dev)
        yield name, f"10.250.{octet}.2"
    finally:
        netns.remove(name)  # its veth end goes with it, and the host's end with the pair
        subprocess.run(["ip", "link", "del", host_dev], capture_output=True, check=False)


@contextmanager
def git_upstream(directory: Path, host: str, token: bytes) -> Iterator[GitUpstream]:
    """A bare repository `project.git` served over HTTPS, requiring `token`; removed with `directory`."""
    with peer_namespace() as (name, address):
        yield from _serve(directory, host, token, name, address)


def _serve(directory: Path, host: str, token: bytes, name: str, address: str) -> Iterator[GitUpstream]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(context)
    ca_pem = directory / "git-ca.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    ca_pem.chmod(0o644)
    root = directory / "repos"
    root.mkdir()
    make_repository(root, "project.git")
    sock = netns.socket_in(name, socket.AF_INET)
    sock.bind((address, 0))
    sock.listen(64)
    upstream = GitUpstream(host, address, sock.getsockname()[1], ca_pem, root, GitLog())
    server = GitServer(root, token, context, upstream.log)
    ready = threading.Event()
    state: dict[str, object] = {}

    async def serve() -> None:
        sock.setblocking(False)
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        with trio.CancelScope() as scope:
            state["scope"], state["token"] = scope, trio.lowlevel.current_trio_token()
            ready.set()
            await serve_git(listener, server)

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
