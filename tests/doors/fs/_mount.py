"""A real workspace mount for tests, without a whole session: the launcher's own mount (launcher/kernel/fuse_mount),
the fs door's FUSE front served by a child running as the workspace's owner, and the app's calls made by another
child, as another uid, in a mount namespace of its own where the mount is attached. Needs root and /dev/fuse.

Numeric ids without accounts, outside the range sessions draw from (0x70000000..0x7FFDFFFF).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from doors._http import ClientConnection, ClientResponse, Limits, Router, serve_http
from doors.fs import build
from doors.fs._fuse_serve import mount_ops, serve_mount
from doors.fs.server import thread_safe
from launcher.kernel import fuse_mount
from launcher.kernel._sys import libc

OWNER = 0x7FFE_0A01  # the workspace's owner: the fs door runs as this uid
APP = 0x7FFE_0A02  # the app
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
GUARD_S = 60.0  # far beyond what any test's calls take on the mount: only a deadlock gets there
HTTP_LIMITS = Limits(idle_timeout_s=GUARD_S, head_timeout_s=GUARD_S, body_grace_s=GUARD_S, body_min_bytes_per_s=1024)

needs_mount = pytest.mark.skipif(os.geteuid() != 0 or fuse_mount.fuse_available() is not None,
                                 reason="needs root and /dev/fuse")


@dataclass
class Mounted:
    """One mount: the backing workspace, the door's pid, its audit events, and a way to act as the app."""

    workspace: str
    mount_fd: int
    door_pid: int
    events_path: str
    point: str
    http_socket: str  # where the door's HTTP API listens (plain HTTP, role app), "" when not served

    def run(self, action: Callable[[str], Any], uid: int = APP) -> Any:
        """Run `action(mount_point)` in a child as `uid` that sees the mount; its return value (or exception)."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                outcome: tuple[str, Any] = ("ok", self._as_app(action, uid))
            except BaseException as exc:  # carried back to the test, which raises it
                outcome = ("error", exc)
            with os.fdopen(write_end, "wb") as out:
                try:
                    pickle.dump(outcome, out)
                except Exception as exc:
                    pickle.dump(("error", RuntimeError(f"unpicklable outcome: {exc!r}")), out)
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as inp:
            data = inp.read()
        os.waitpid(pid, 0)
        kind, value = pickle.loads(data)
        if kind == "error":
            raise value
        return value

    def _as_app(self, action: Callable[[str], Any], uid: int) -> Any:
        libc.unshare(libc.CLONE_NEWNS)
        libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
        clone = libc.open_tree(self.mount_fd, libc.OPEN_TREE_CLONE)
        target = os.open(self.point, os.O_PATH | os.O_DIRECTORY)
        fuse_mount.attach(clone, target)
        os.close(target)
        os.close(clone)
        os.close(self.mount_fd)
        if uid != 0:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        return action(self.point)

    def events(self) -> list[dict[str, Any]]:
        """The audit events the door queued and reported so far."""
        with open(self.events_path) as lines:
            return [json.loads(line) for line in lines if line.strip()]

    def kill_door(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.door_pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.door_pid, 0)


def _serve(workspace: str, rows: dict[str, Any], device_fd: int, events_path: str, http_socket: str) -> None:
    """The door child: as the owner, the fs door's mount front over `workspace`, every event to a file; and its
    HTTP API on `http_socket` when given, in the same trio loop with the audit sink the door's own (thread_safe)."""
    out = open(events_path, "a", buffering=1)  # noqa: SIM115 - lives as long as this process

    def audit(event: dict[str, Any]) -> None:
        out.write(json.dumps(event) + "\n")

    root_fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    listener = None
    if http_socket:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(http_socket)
        os.chmod(http_socket, 0o666)
        listener.listen(16)
    os.setgroups([])
    os.setresgid(OWNER, OWNER, OWNER)
    os.setresuid(OWNER, OWNER, OWNER)
    api = build({**rows, "workspace": workspace}, thread_safe(audit), workspace_fd=root_fd)
    ops = mount_ops(api, {"mount_owner": [APP, APP]})

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_mount, ops, device_fd)
            if listener is not None:
                router = Router("fs", api.routes())
                http = trio.SocketListener(trio.socket.from_stdlib_socket(listener))
                nursery.start_soon(trio.serve_listeners, lambda stream: serve_http(stream, router, HTTP_LIMITS,
                                                                                  peer_role="app"), [http])

    trio.run(serve)


def http_request(http_socket: str, method: str, target: str, body: bytes = b"") -> ClientResponse:
    """One request to the door's HTTP API (from the app's child, say); a socket timeout far beyond any answer, so
    that a hung door fails the caller rather than holding it."""
    conn = ClientConnection("fs")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(GUARD_S * 2)
        sock.connect(http_socket)
        sock.sendall(conn.request_bytes(method, target, body))
        while (response := conn.next_response()) is None:
            conn.receive_data(sock.recv(65536))
    return response


@contextlib.contextmanager
def mounted(rows: dict[str, Any] | None = None, setup: Callable[[str], None] | None = None, *, http: bool = False,
            fd_limit: int | None = None) -> Iterator[Mounted]:
    """A workspace owned by OWNER (made by `setup(path)` as root first), served through a mount for APP (and,
    with `http`, through the door's HTTP API too, on Mounted.http_socket); the door's RLIMIT_NOFILE `fd_limit`
    when given (a session's doors get 4096)."""
    workspace = tempfile.mkdtemp(prefix="sh-test-mount-ws-")
    point = tempfile.mkdtemp(prefix="sh-test-mount-at-")
    events_path = os.path.join(tempfile.mkdtemp(prefix="sh-test-mount-ev-"), "events.jsonl")
    os.chmod(os.path.dirname(events_path), 0o755)
    http_socket = os.path.join(os.path.dirname(events_path), "fs.sock") if http else ""
    door_pid = -1
    mount = None
    try:
        if setup is not None:
            setup(workspace)
        _chown_tree(workspace)
        os.chmod(point, 0o755)
        mount = fuse_mount.make_workspace_mount(OWNER, OWNER)
        door_pid = os.fork()
        if door_pid == 0:
            try:
                os.close(mount.mount_fd)
                if fd_limit is not None:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))
                _serve(workspace, rows or {}, mount.device_fd, events_path, http_socket)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(0)
        mount.close_device()  # only the door holds it: its death ends the connection
        yield Mounted(workspace, mount.mount_fd, door_pid, events_path, point, http_socket)
    finally:
        if door_pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(door_pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(door_pid, 0)
        if mount is not None:
            mount.close()
        for path in (workspace, point, os.path.dirname(events_path)):
            shutil.rmtree(path, ignore_errors=True)


def _chown_tree(root: str) -> None:
    for top, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(top, name), OWNER, OWNER)
    os.chown(root, OWNER, OWNER)
    os.chmod(root, 0o755)


@contextlib.contextmanager
def deadlock_guard(mount_fd: int) -> Iterator[list[bool]]:
    """A liveness guard, not a speed limit: if the app's calls have not returned after GUARD_S, abort the mount's
    FUSE connection (fusectl, mounted privately for that) so that a deadlocked door fails the test rather than
    leaving the app and the door stuck for ever (a request the door has read cannot be interrupted)."""
    fired: list[bool] = []
    connection = os.minor(os.fstat(mount_fd).st_dev)  # now, while the door answers (a GETATTR)

    def abort() -> None:
        fired.append(True)
        control = tempfile.mkdtemp(prefix="sh-test-fusectl-")
        try:
            subprocess.run(["mount", "-t", "fusectl", "fusectl", control], check=True)
            try:
                with open(f"{control}/{connection}/abort", "w") as abort_file:
                    abort_file.write("1")
            finally:
                subprocess.run(["umount", control], check=True)
        finally:
            os.rmdir(control)

    timer = threading.Timer(GUARD_S, abort)
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()
        timer.join()
