"""The fs door on the real mutual-TLS transport: the app's client, abuse, and 500 parallel connections."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio

import doors.fs.client as fs_client_module
from doors._http import Limits, Router
from doors._transport._client import AsyncDoorClient, Dial
from doors._transport._errors import TransportError
from doors._transport._server import serve_mtls, unix_listener
from doors._transport._stream import TlsStream
from doors._transport.testing import Session, scratch_dir
from doors.client import DoorClient
from doors.fs import build
from doors.fs.client import DoorRefused, FsClient
from pki.edges import EdgePolicy
from pki.testing import SessionPKI

ROWS = {"read_only": [".git"], "append_only": ["log"], "hidden": [".env"]}
LIMITS = Limits(max_header_bytes=16 * 1024, body_grace_s=0.5, body_min_bytes_per_s=2048, idle_timeout_s=5,
                head_timeout_s=1)


@pytest.fixture
def s() -> Iterator[Session]:
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory)


async def _serve(s: Session, root: str, nursery: trio.Nursery, events: list[dict[str, Any]]) -> str:
    api = build({"workspace": root, **ROWS}, events.append)
    path = os.path.join(s.directory, "fs.sock")
    await nursery.start(functools.partial(
        serve_mtls, [unix_listener(path)], s.server_ctx("fs"), s.pki.identity("fs"), EdgePolicy(s.edges),
        Router("fs", api.routes()), events.append, limits=LIMITS))
    return path


@contextlib.asynccontextmanager
async def fs_door(s: Session, root: str) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    events: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        path = await _serve(s, root, nursery, events)
        yield path, events
        nursery.cancel_scope.cancel()


@contextlib.contextmanager
def fs_door_in_thread(s: Session, root: str) -> Iterator[str]:
    started: queue.Queue[Any] = queue.Queue()

    async def main() -> None:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                path = await _serve(s, root, nursery, [])
                started.put((trio.lowlevel.current_trio_token(), scope, path))

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    token, scope, path = started.get(timeout=30)
    try:
        yield path
    finally:
        token.run_sync_soon(scope.cancel)
        thread.join(timeout=30)


def _client(s: Session, path: str) -> AsyncDoorClient:
    return AsyncDoorClient(Dial("fs", path, s.client_ctx("app"), s.pki.trust_domain, s.pki.session_id, "app"))


async def _raw(s: Session, path: str) -> TlsStream:
    tls = TlsStream.wrap(await trio.open_unix_socket(path), s.client_ctx("app"), server_side=False)
    await tls.do_handshake()
    return tls


async def _read_until_close(tls: TlsStream) -> bytes:
    received = b""
    with trio.move_on_after(10), contextlib.suppress(Exception):
        while piece := await tls.receive_some(65536):
            received += piece
    return received


def test_the_apps_blocking_client_over_mtls(s: Session, workspace: str) -> None:
    bundle = s.pem_path("bundle", s.pki.bundle_pem())
    with fs_door_in_thread(s, workspace) as path:
        door = DoorClient.from_files("fs", path, s.svid_path("app"), bundle, s.pki.trust_domain,
                                     s.pki.session_id, client_role="app")
        with FsClient(door) as fs:
            fs.mkdir("notes")
            written = fs.write("notes/a b.md", b"hello")
            assert fs.read("notes/a b.md") == b"hello"
            assert fs.read("notes/a b.md", offset=1, length=3) == b"ell"
            assert fs.stat("notes/a b.md")["etag"] == written["etag"]
            fs.append("log", b"one\n")
            fs.append("log", b"two\n")
            assert [e["name"] for e in fs.list("notes")] == ["a b.md"]
            fs.rename("notes/a b.md", "notes/c.md")
            with pytest.raises(DoorRefused) as stale:
                fs.write("notes/c.md", b"new", if_match=written["etag"])
            assert stale.value.refusal.status == 409 and stale.value.refusal.row == "version"
            with pytest.raises(DoorRefused) as refused:
                fs.delete("log")
            assert refused.value.refusal.row == "append_only" and refused.value.refusal.who == "fs"
            assert "doors.fs.append_only" in refused.value.refusal.hint
            fs.delete("notes/c.md")
            fs.write("empty", b"")
            assert fs.read("empty") == b""
            large = os.urandom(2500)
            fs.write("large", large)
            fs_client_module.READ_PIECE = 1000  # read in three ranges, each checked against the etag
            try:
                assert fs.read("large") == large
            finally:
                fs_client_module.READ_PIECE = 16 * 1024 * 1024
    with open(os.path.join(workspace, "log"), "rb") as landed:
        assert landed.read() == b"one\ntwo\n"


async def test_malformed_http_and_huge_headers_do_not_hurt_the_door(s: Session, workspace: str) -> None:
    async with fs_door(s, workspace) as (path, _):
        garbage = await _raw(s, path)
        await garbage.send_all(b"\x00\x01 NOT HTTP\r\n\r\n")
        assert (await _read_until_close(garbage)).startswith(b"HTTP/1.1 400")
        huge = await _raw(s, path)
        await huge.send_all(b"GET /v0/fs/list HTTP/1.1\r\nhost: fs\r\nx-big: " + b"a" * 100_000 + b"\r\n\r\n")
        assert (await _read_until_close(huge)).startswith(b"HTTP/1.1 431")
        truncated = await _raw(s, path)
        await truncated.send_all(b"PUT /v0/fs/files/x HTTP/1.1\r\nhost: fs\r\ntransfer-encoding: chunked\r\n\r\n"
                                 b"zz\r\nbroken")
        assert (await _read_until_close(truncated)).startswith(b"HTTP/1.1 400")
        async with _client(s, path) as client:
            assert (await client.request("PUT", "/v0/fs/files/after", body=b"ok")).status == 201
    assert sorted(os.listdir(workspace)) == ["after"]


async def test_a_slow_body_is_cut_off_while_another_clients_write_lands(s: Session, workspace: str) -> None:
    async with fs_door(s, workspace) as (path, events):
        slow = await _raw(s, path)
        await slow.send_all(b"PUT /v0/fs/files/slow HTTP/1.1\r\nhost: fs\r\ncontent-length: 100000\r\n\r\n"
                            + b"x" * 10)
        async with _client(s, path) as client:
            assert (await client.request("PUT", "/v0/fs/files/fast", body=b"fast")).status == 201
        assert (await _read_until_close(slow)).startswith(b"HTTP/1.1 408")
    assert os.listdir(workspace) == ["fast"]  # no partial file and no temporary file left
    refused = [e for e in events if e.get("op") == "write" and e.get("path") == "slow"]
    assert refused and refused[-1]["status"] == 408 and refused[-1]["decision"] == "refuse"


@pytest.mark.slow
async def test_500_parallel_connections_neither_crash_the_door_nor_lose_a_write(s: Session,
                                                                              workspace: str) -> None:
    outcomes = {"ok": 0, "refused": 0}
    async with fs_door(s, workspace) as (path, _):
        async with _client(s, path) as victim:
            assert (await victim.request("GET", "/v0/fs/list")).status == 200  # holds its connection

            async def flood(number: int) -> None:
                try:
                    async with _client(s, path) as client:
                        response = await client.request("PUT", f"/v0/fs/files/f{number}", body=b"%d" % number)
                    outcomes["ok" if response.status == 201 else "refused"] += 1
                except TransportError as refused:
                    # The door was full (256 connections) and closed at once: DoorUnavailable says so.
                    assert "closed the connection during the TLS handshake" in str(refused)
                    outcomes["refused"] += 1

            async with trio.open_nursery() as nursery:
                for number in range(500):
                    nursery.start_soon(flood, number)
                assert (await victim.request("PUT", "/v0/fs/files/victim", body=b"mine")).status == 201
        async with _client(s, path) as after:
            listing = json.loads((await after.request("GET", "/v0/fs/list")).body)
    assert sum(outcomes.values()) == 500 and outcomes["ok"] > 0
    names = {entry["name"] for entry in listing["entries"]}
    assert "victim" in names and len(names) == outcomes["ok"] + 1
    with open(os.path.join(workspace, "victim"), "rb") as landed:
        assert landed.read() == b"mine"


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")
def test_curl_equivalents_in_the_readme_work(s: Session, workspace: str) -> None:
    bundle = s.pem_path("bundle", s.pki.bundle_pem())
    upload = os.path.join(s.directory, "notes.md")
    with open(upload, "wb") as out:
        out.write(b"# notes\n")
    with fs_door_in_thread(s, workspace) as path:
        base = ["curl", "-sS", "--tlsv1.3", "--cert", s.svid_path("app"), "--key", s.svid_path("app"),
                "--cacert", bundle, "--unix-socket", path]

        def curl(*args: str) -> str:
            result = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=True)
            return result.stdout

        # curl sends `Expect: 100-continue` for -T; the door answers 100 at once, so curl does not wait 1 s.
        put = subprocess.run([*base, "-v", "-T", upload, "https://fs/v0/fs/files/notes.md"], capture_output=True,
                             text=True, timeout=60, check=True)
        assert "Expect: 100-continue" in put.stderr and "HTTP/1.1 100 Continue" in put.stderr
        assert json.loads(put.stdout)["created"]
        assert curl("--data-binary", "line\n", "https://fs/v0/fs/append/log") != ""
        assert curl("https://fs/v0/fs/files/notes.md", "-r", "0-6") == "# notes"
        assert json.loads(curl("-X", "DELETE", "https://fs/v0/fs/files/log"))["error"] == "append_only"
        names = [entry["name"] for entry in json.loads(curl("https://fs/v0/fs/list"))["entries"]]
        assert names == ["log", "notes.md"]


def test_the_shell_commands_put_get_append_ls_rm(s: Session, workspace: str) -> None:
    with fs_door_in_thread(s, workspace) as path:
        env = {**os.environ, "SHARNESS_SVID": s.svid_path("app"), "SHARNESS_BUNDLE": s.pem_path(
            "bundle", s.pki.bundle_pem()), "SHARNESS_TRUST_DOMAIN": s.pki.trust_domain,
            "SHARNESS_SESSION": s.pki.session_id, "SHARNESS_DOOR_FS": path}

        def fs(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
            return subprocess.run([sys.executable, "-m", "doors.fs.cli", *args], input=stdin, env=env,
                                  capture_output=True, timeout=60, check=False)

        assert fs("put", "a.txt", stdin=b"hello\n").returncode == 0
        assert fs("append", "log", stdin=b"one\n").returncode == 0
        assert fs("get", "a.txt").stdout == b"hello\n"
        assert fs("ls").stdout == b"a.txt\nlog\n"
        refused = fs("rm", "log")
        assert refused.returncode == 1 and b"append_only" in refused.stderr and b"hint:" in refused.stderr
        assert fs("rm", "a.txt").returncode == 0
        assert fs("get", "a.txt").returncode == 1
        escape = fs("get", "../etc/passwd")
        assert escape.returncode == 1 and b"refused by fs" in escape.stderr and escape.stdout == b""
