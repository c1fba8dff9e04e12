"""The test git server (tests/doors/net/git_server.py) on a neighbour's address (tests/integration/_neighbour.py: not
this host's own, which the net door refuses), in a thread, with a trustme CA whose PEM the manifest names as
doors.net.ca_bundle."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trio
import trustme

from tests.doors.net.git_server import GitLog, GitServer, make_repository, serve_git
from tests.integration._neighbour import Neighbour, neighbour


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
def git_upstream(directory: Path, host: str, token: bytes) -> Iterator[GitUpstream]:
    """A bare repository `project.git` served over HTTPS, requiring `token`, at a neighbour's address; the
    neighbour removed after, the repository with `directory`."""
    with neighbour() as place:
        yield from _serving(directory, host, token, place)


def _serving(directory: Path, host: str, token: bytes, place: Neighbour) -> Iterator[GitUpstream]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(context)
    ca_pem = directory / "git-ca.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    ca_pem.chmod(0o644)
    root = directory / "repos"
    root.mkdir()
    make_repository(root, "project.git")
    address = place.address
    sock = place.socket()
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
