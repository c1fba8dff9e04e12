"""A test git server over HTTPS: `git http-backend` (CGI) behind a small TLS server that requires a token.

A request passes only with `Authorization: Basic base64(<user>:<token>)` or `Bearer <token>`; anything else is a
401 asking for Basic credentials (what git answers by asking its credential helpers, or failing without a
terminal). `/echo` answers 200 with the Authorization it was sent, in a header and in the body (an upstream that
leaks the credential back). Every request's method, path and whether it was authorised are logged.
"""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import trio

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
MAX = 64 * 1024


@dataclass
class GitLog:
    """What the git server saw: per request, method, path, whether the token was right, the Authorization header."""

    requests: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class GitServer:
    root: Path  # GIT_PROJECT_ROOT: bare repositories under it
    token: bytes
    context: ssl.SSLContext
    log: GitLog

    def authorised(self, authorization: bytes) -> bool:
        scheme, _, value = authorization.partition(b" ")
        if scheme.lower() == b"bearer":
            return value == self.token
        if scheme.lower() == b"basic":
            try:
                return base64.b64decode(value, validate=True).partition(b":")[2] == self.token
            except ValueError:
                return False
        return False


def make_repository(root: Path, name: str) -> Path:
    """A bare repository `name` under `root` with one commit on main, pushable over HTTP."""
    bare = root / name
    work = root.parent / f"{name}-seed"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root.parent)}
    for argv in (["git", "init", "-q", "--bare", "-b", "main", str(bare)],
                 ["git", "-C", str(bare), "config", "http.receivepack", "true"],
                 ["git", "init", "-q", "-b", "main", str(work)]):
        subprocess.run(argv, check=True, env=env)
    (work / "README").write_text("seeded\n")
    for argv in (["git", "-C", str(work), "add", "README"], ["git", "-C", str(work), "commit", "-qm", "seed"],
                 ["git", "-C", str(work), "push", "-q", str(bare), "main"]):
        subprocess.run(argv, check=True, env=env)
    subprocess.run(["chmod", "-R", "a+rwX", str(root)], check=True)
    return bare


async def _cgi(server: GitServer, request: h11.Request, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    path, _, query = request.target.partition(b"?")
    headers = {name.lower(): value for name, value in request.headers}
    env = {"GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": "test",
           "REQUEST_METHOD": request.method.decode(), "PATH_INFO": path.decode(), "QUERY_STRING": query.decode(),
           "CONTENT_TYPE": headers.get(b"content-type", b"").decode(), "CONTENT_LENGTH": str(len(body)),
           "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1", "PATH": "/usr/bin:/bin"}
    if b"content-encoding" in headers:
        env["HTTP_CONTENT_ENCODING"] = headers[b"content-encoding"].decode()
    done = await trio.run_process([HTTP_BACKEND], stdin=body, capture_stdout=True, capture_stderr=True, env=env,
                                  check=False)
    head, _, payload = done.stdout.partition(b"\r\n\r\n")
    status, fields = 200, []
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.lower() == b"status":
            status = int(value.split()[0])
        elif name:
            fields.append((name.strip(), value.strip()))
    return status, fields, payload


async def _answer(server: GitServer, request: h11.Request, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    authorization = next((v for n, v in request.headers if n.lower() == b"authorization"), b"")
    ok = server.authorised(authorization)
    server.log.requests.append({"method": request.method.decode(), "target": request.target.decode(),
                                "authorised": ok, "authorization": authorization.decode("latin-1")})
    if request.target.startswith(b"/echo"):
        return 200, [(b"x-echo", authorization), (b"content-type", b"text/plain")], b"you sent: " + authorization
    if not ok:
        return 401, [(b"www-authenticate", b'Basic realm="test git"')], b"token required\n"
    return await _cgi(server, request, body)


async def _connection(server: GitServer, stream: trio.SocketStream) -> None:
    tls = trio.SSLStream(stream, server.context, server_side=True)
    conn = h11.Connection(h11.SERVER)
    while True:
        request, body = None, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await tls.receive_some(MAX)))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            else:
                break
        if request is None:
            return
        status, fields, payload = await _answer(server, request, body)
        fields = [(n, v) for n, v in fields if n.lower() != b"content-length"]
        response = h11.Response(status_code=status, headers=[*fields, (b"content-length", str(len(payload)).encode())])
        await tls.send_all(conn.send(response) + conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage()))
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return
        conn.start_next_cycle()


async def serve_git(listener: trio.SocketListener, server: GitServer,
                    *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve `server` on `listener` until cancelled."""
    async with trio.open_nursery() as nursery:
        task_status.started()
        while True:
            stream = await listener.accept()

            async def one(stream: trio.SocketStream = stream) -> None:
                try:
                    async with stream:
                        await _connection(server, stream)
                except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, h11.ProtocolError):
                    pass

            nursery.start_soon(one)
