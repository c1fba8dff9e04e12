"""`sharness-launch fs …` against a real fs door over mutual TLS, served from a thread; no session needed."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from doors._http import Router
from doors._transport import serve_mtls, unix_listener
from doors._transport.testing import Session, doors_in_thread, scratch_dir
from doors.fs import build
from launcher import cli
from pki.edges import EdgePolicy
from pki.testing import SessionPKI
from tests import as_user

CLI = Path(sys.executable).parent / "sharness-launch"
ROWS = {"append_only": ["log"], "hidden": [".env"]}


@pytest.fixture
def s() -> Iterator[Session]:
    with scratch_dir() as directory:
        yield Session(SessionPKI.create(), directory)


@pytest.fixture
def workspace() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="sharness-cli-fs-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def fs_door(s: Session, root: str) -> Iterator[str]:
    """The fs door over `root` on a Unix socket, served by a trio loop in a thread; yields the socket path."""
    started: queue.Queue[Any] = queue.Queue()
    path = os.path.join(s.directory, "fs.sock")

    async def main() -> None:
        api = build({"workspace": root, **ROWS}, lambda event: None)
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                await nursery.start(functools.partial(
                    serve_mtls, [unix_listener(path)], s.server_ctx("fs"), s.pki.identity("fs"),
                    EdgePolicy(s.edges), Router("fs", api.routes()), lambda event: None))
                started.put((trio.lowlevel.current_trio_token(), scope))
        os.close(api.workspace.root_fd)

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    token, scope = started.get(timeout=30)
    try:
        yield path
    finally:
        token.run_sync_soon(scope.cancel)
        thread.join(timeout=30)


def session_env(s: Session, door_path: str | None) -> dict[str, str]:
    """The variables the launcher gives the app (SHARNESS_DOOR_FS only when `door_path` is given)."""
    env = {"SHARNESS_SVID": s.svid_path("app"), "SHARNESS_BUNDLE": s.pem_path("bundle", s.pki.bundle_pem()),
           "SHARNESS_TRUST_DOMAIN": s.pki.trust_domain, "SHARNESS_SESSION": s.pki.session_id}
    return env if door_path is None else {**env, "SHARNESS_DOOR_FS": door_path}


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes]) -> Any:
    """Run `sharness-launch fs ARGS` in-process with `env` and `stdin`; return (code, stdout, stderr)."""

    def invoke(env: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[int, bytes, str]:
        for name in ("SHARNESS_SVID", "SHARNESS_BUNDLE", "SHARNESS_TRUST_DOMAIN", "SHARNESS_SESSION",
                     "SHARNESS_DOOR_FS"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = cli.main(["fs", *args])
        captured = capfdbinary.readouterr()
        return code, captured.out, captured.err.decode()

    return invoke


def test_put_append_get_ls_stat_mv_rm(s: Session, workspace: str, run: Any) -> None:
    with fs_door(s, workspace) as path:
        env = session_env(s, path)
        assert run(env, "put", "a.txt", stdin=b"hello\n")[0] == 0
        assert run(env, "append", "log", stdin=b"one\n")[0] == 0
        assert run(env, "get", "a.txt") == (0, b"hello\n", "")
        assert run(env, "ls") == (0, b"a.txt\nlog\n", "")
        code, out, _ = run(env, "ls", "--json")
        listing = json.loads(out)
        assert code == 0 and listing["ok"] is True and [e["name"] for e in listing["entries"]] == ["a.txt", "log"]
        code, out, _ = run(env, "stat", "a.txt", "--json")
        assert code == 0 and json.loads(out)["size"] == 6
        code, out, _ = run(env, "mv", "a.txt", "b.txt", "--json")
        assert code == 0 and json.loads(out)["ok"] is True
        assert run(env, "rm", "b.txt")[0] == 0
    assert os.listdir(workspace) == ["log"]


def test_a_refusal_names_who_and_the_row_and_exits_1(s: Session, workspace: str, run: Any) -> None:
    with fs_door(s, workspace) as path:
        env = session_env(s, path)
        assert run(env, "append", "log", stdin=b"one\n")[0] == 0
        code, out, err = run(env, "rm", "log")
        assert (code, out) == (1, b"")
        assert "refused by fs (row `append_only`)" in err and "hint: " in err
        code, out, _ = run(env, "rm", "log", "--json")
        refusal = json.loads(out)
        assert code == 1
        assert (refusal["ok"], refusal["who"], refusal["row"], refusal["status"]) == (False, "fs", "append_only", 403)
        code, out, err = run(env, "get", "../etc/passwd")
        assert (code, out) == (1, b"") and "refused by fs (row `within_root`)" in err


def test_usage_errors_exit_2(s: Session, run: Any) -> None:
    env = session_env(s, "/run/sharness-none/fs.sock")
    assert run(env)[0] == 2
    assert run(env, "get")[0] == 2
    assert run(env, "get", "a", "--json")[0] == 2  # get's data is the file itself
    assert run(env, "chmod", "a")[0] == 2


def test_a_door_that_cannot_be_reached_exits_69(s: Session, run: Any) -> None:
    code, out, err = run(session_env(s, os.path.join(s.directory, "no-door.sock")), "ls")
    assert (code, out) == (69, b"") and "cannot be reached" in err
    code, out, _ = run(session_env(s, os.path.join(s.directory, "no-door.sock")), "ls", "--json")
    assert code == 69 and json.loads(out)["error"] == "unavailable"


def test_outside_a_session_exits_69_and_says_so(run: Any) -> None:
    code, _, err = run({}, "ls")
    assert code == 69 and "not inside a sharness session" in err


def test_a_session_without_the_edge_app_fs_is_refused_by_the_launcher(s: Session, run: Any) -> None:
    code, _, err = run(session_env(s, None), "ls")
    assert code == 1 and "refused by launcher (row `edges`)" in err and "app->fs" in err


def test_a_peer_that_is_not_the_fs_door_is_refused_by_the_client(s: Session, run: Any) -> None:
    with doors_in_thread(s, {"fs": "net"}) as doors:  # the socket named fs is served with net's SVID
        code, _, err = run(session_env(s, str(doors["fs"])), "ls")
    assert code == 1 and "refused by sharness-launch fs (row `svid`)" in err


def test_the_console_script_pipes_bytes_through(s: Session, workspace: str) -> None:
    with fs_door(s, workspace) as path:
        env = {**os.environ, **session_env(s, path)}
        data = bytes(range(256)) * 64
        put = subprocess.run([str(CLI), "fs", "put", "blob"], input=data, env=env, capture_output=True, timeout=60)
        assert put.returncode == 0, put.stderr
        got = subprocess.run([str(CLI), "fs", "get", "blob"], env=env, capture_output=True, timeout=60)
        assert (got.returncode, got.stdout) == (0, data)


def test_fs_help_works_without_a_session() -> None:
    result = subprocess.run([str(CLI), "fs", "--help"], capture_output=True, text=True, timeout=60,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert result.returncode == 0
    assert "usage: sharness-launch fs" in result.stdout and "69" in result.stdout
    assert all(command in result.stdout for command in ("get", "put", "append", "ls", "rm"))


@pytest.mark.root
def test_fs_help_works_without_root() -> None:
    command = [*as_user.argv(65534), str(CLI), "fs", "--help"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}, cwd="/")
    assert result.returncode == 0, result.stderr
    assert "usage: sharness-launch fs" in result.stdout
