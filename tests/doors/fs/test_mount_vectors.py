"""The conformance vectors of the HTTP API (doors/fs/vectors), run against the workspace mount: each request as the
system calls an unmodified program makes for it, each expected refusal as the errno of its row
(doors/fs/_fuse_errno.py). Both front ends, one set of vectors.

A step the mount cannot express is skipped, with the reason counted: a path through `..`, an absolute one or a
symlink leading out of the workspace is resolved by the app's own kernel in its own mount namespace (held there
by its private root and Landlock: tests/integration/test_fs_mount_session.py), and If-Match/If-None-Match and
ranges are HTTP's.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import pytest

from doors._refusal import Refusal
from doors.fs._fuse_errno import errno_of
from tests.doors.fs._mount import mounted, needs_mount

pytestmark = [pytest.mark.root, needs_mount]

VECTORS = Path(__file__).resolve().parents[3] / "doors" / "fs" / "vectors"
RENAME_NOREPLACE = 1
_libc = ctypes.CDLL(None, use_errno=True)
SKIPPED: dict[str, int] = {}


def _leading_out(setup: dict[str, Any]) -> set[str]:
    return {name for name, target in setup.get("symlinks", {}).items()
            if target == "OUTSIDE" or target.startswith("/") or target.startswith("..")}


def _skip_reason(vector: dict[str, Any]) -> str | None:
    out = _leading_out(vector["setup"])
    for step in vector["steps"]:
        request = step["request"]
        if request.get("headers") or (urlsplit(request["target"]).query not in ("", "exec=1")):
            return "If-Match, If-None-Match, ranges and query flags are HTTP's"
        for path in _paths(request):
            parts = [part for part in path.split("/") if part]
            if path.startswith("/") or ".." in parts:
                return "`..` and absolute paths are resolved by the app's kernel in its own namespace"
            if parts and parts[0] in out:
                return "a symlink leading out is followed by the app's kernel, into its own private root"
            if "\x00" in path:
                return "a NUL cannot be passed to a system call"
        if request["target"].startswith("/v0/fs/") is False or request["target"].split("/")[3] not in (
                "files", "append", "mkdir", "rename", "list", "stat"):
            return "not a file operation"
    return None


def _paths(request: dict[str, Any]) -> list[str]:
    target = urlsplit(request["target"])
    if target.path.startswith("/v0/fs/rename"):
        body = json.loads(request.get("body") or "{}")
        return [str(body.get("from", "")), str(body.get("to", ""))]
    rest = target.path.split("/", 4)[4] if target.path.count("/") >= 4 else ""
    return [os.fsdecode(unquote_to_bytes(rest))]  # an invalid UTF-8 name stays the bytes it is


def _load() -> list[Any]:
    cases = []
    for file in sorted(VECTORS.glob("*.json")):
        for vector in json.loads(file.read_text()):
            cases.append(pytest.param(vector, id=f"{file.stem}: {vector['name']}"))
    return cases


def _setup(setup: dict[str, Any]) -> Any:
    def make(root: str) -> None:
        for directory in setup.get("dirs", []):
            os.makedirs(os.path.join(root, directory), exist_ok=True)
        for name, content in setup.get("files", {}).items():
            with open(os.path.join(root, name), "w") as out:
                out.write(content)
        for name, target in setup.get("symlinks", {}).items():
            os.symlink("/nonexistent" if target == "OUTSIDE" else target, os.path.join(root, name))
    return make


def _call(point: str, step: dict[str, Any]) -> int:
    """Do what the request asks, as system calls on the mount; 0 or the errno."""
    request = step["request"]
    method, target = request["method"], urlsplit(request["target"])
    body = request.get("body", "").encode()
    kind = target.path.split("/")[3]
    paths = [os.path.join(point, path) for path in _paths(request)]
    # The HTTP rename never replaces. rename(2) does (the stronger attack: over a protected file, the rows must
    # refuse); renameat2(RENAME_NOREPLACE) is the same request as HTTP's, where the vector expects `exists`.
    noreplace = step["expect"].get("error") == "exists"
    try:
        _act(method, kind, paths, body, target.query, noreplace)
    except OSError as exc:
        return exc.errno or errno.EIO
    return 0


def _act(method: str, kind: str, paths: list[str], body: bytes, query: str, noreplace: bool) -> None:
    path = paths[0]
    if method == "GET" and kind == "files":
        with open(path, "rb") as inp:
            inp.read()
    elif method == "GET" and kind == "stat":
        os.stat(path)
    elif method == "GET" and kind == "list":
        os.listdir(path)
    elif method == "PUT":
        with open(path, "wb") as out:
            out.write(body)
        if "exec=1" in query:
            os.chmod(path, 0o755)
    elif method == "POST" and kind == "append":
        with open(path, "ab") as out:
            out.write(body)
    elif method == "POST" and kind == "mkdir":
        try:
            os.mkdir(path)
        except FileExistsError:  # the HTTP mkdir is `mkdir -p` of the last name
            if not os.path.isdir(path):
                raise
    elif method == "DELETE":
        (os.rmdir if os.path.isdir(path) and not os.path.islink(path) else os.unlink)(path)
    elif method == "POST" and kind == "rename":
        source, dest = (os.fsencode(p) for p in paths)
        if _libc.renameat2(-100, source, -100, dest, RENAME_NOREPLACE if noreplace else 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
    else:
        raise AssertionError(f"unexpected {method} {kind}")


def _expected(step: dict[str, Any]) -> set[int]:
    expect = step["expect"]
    status = expect["status"]
    if status < 300:
        return {0}
    row = expect.get("error", "")
    if row == "within_root" and "." in _paths(step["request"]):
        return {errno.EISDIR, errno.EBUSY}  # the root itself: the kernel refuses first (a directory, a mount point)
    code = errno_of(Refusal(status, row, "fs", "", ""))
    if row == "hidden":
        return {code, errno.ENOENT}  # a hidden name does not exist for the app; making one is refused
    if row == "path":
        return {code, errno.ENAMETOOLONG}
    if row == "not_found":
        return {errno.ENOENT}
    return {code}


@pytest.mark.parametrize("vector", _load())
def test_vector_on_the_mount(vector: dict[str, Any]) -> None:
    reason = _skip_reason(vector)
    if reason is not None:
        pytest.skip(reason)
    with mounted(vector["rows"], _setup(vector["setup"])) as mount:
        steps = vector["steps"]
        results = mount.run(lambda point: [_call(point, step) for step in steps])
    for number, (step, got) in enumerate(zip(steps, results, strict=True)):
        want = _expected(step)
        assert got in want, (number, step, errno.errorcode.get(got, got), [errno.errorcode.get(w) for w in want])


def test_most_vectors_run_on_the_mount() -> None:
    """The skips are the few the mount cannot express, not a way to pass."""
    vectors = [param.values[0] for param in _load()]
    runnable = [vector for vector in vectors if _skip_reason(vector) is None]
    assert len(runnable) >= 0.75 * len(vectors), (len(runnable), len(vectors))
