"""The manifest's paths resolved once on this machine: what is refused (exit 78), and the pins of the rest."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from manifests.samples import DROP, load, sample

from launcher.kernel._sys import libc
from launcher.kernel.mountns import MS_PRIVATE, MS_REC
from launcher.lifecycle.preflight import PreflightError
from launcher.lifecycle.preflight_paths import path_refusals, resolve_paths
from launcher.manifest import Manifest
from launcher.policy.layout import SessionPaths

PYTHON = ("/opt/sh-test-python",)  # absent: the components' Python paths do not matter here unless a test says


def _tree(base: Path) -> dict[str, Path]:
    paths = {name: base / name for name in ("ws", "agent", "agent/bin", "secrets", "run")}
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    (base / "secrets" / "anthropic").write_text("sk-test")
    return paths


def _manifest(base: Path, read: list[str] | None = None, exec_: list[str] | None = None,
              secret: str | None = None) -> Manifest:
    return load(sample(workspace=str(base / "ws"),
                       app__files={"read": read if read is not None else [str(base / "agent")],
                                   "exec": exec_ if exec_ is not None else [str(base / "agent" / "bin")]},
                       doors__keys__secrets__anthropic__from=secret or str(base / "secrets" / "anthropic"),
                       doors__fs__hidden=DROP))


def _layout(base: Path) -> SessionPaths:
    return SessionPaths("0123abcd", run_root=str(base / "run"))


def _refusals(manifest: Manifest, base: Path, python: tuple[str, ...] = PYTHON) -> list[tuple[str, str]]:
    refusals, _ = path_refusals(manifest, _layout(base), python)
    return [(refusal.pointer, refusal.message) for refusal in refusals]


def _identity(path: Path) -> tuple[int, int]:
    return os.stat(path).st_dev, os.stat(path).st_ino


def test_plain_paths_are_pinned_to_what_they_are(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    refusals, pins = path_refusals(_manifest(tmp_path), _layout(tmp_path), PYTHON)
    assert refusals == ()
    assert pins == {str(paths["ws"]): _identity(paths["ws"]), str(paths["agent"]): _identity(paths["agent"]),
                    str(paths["agent/bin"]): _identity(paths["agent/bin"]),
                    str(paths["secrets"] / "anthropic"): _identity(paths["secrets"] / "anthropic")}


@pytest.mark.parametrize("where", ["the path", "an ancestor"])
def test_a_symlink_anywhere_in_a_path_is_refused_naming_it_and_where_it_leads(tmp_path: Path, where: str) -> None:
    paths = _tree(tmp_path)
    (tmp_path / "link").symlink_to(paths["agent"])
    read = str(tmp_path / "link") if where == "the path" else str(tmp_path / "link" / "bin")
    found = _refusals(_manifest(tmp_path, read=[read]), tmp_path)
    assert len(found) == 1 and found[0][0] == "/app/files/read/0"
    assert f"{tmp_path / 'link'}" in found[0][1] and "symlink" in found[0][1] and str(paths["agent"]) in found[0][1]


def test_a_missing_path_and_a_socket_are_refused(tmp_path: Path) -> None:
    _tree(tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "db.sock"))
        found = _refusals(_manifest(tmp_path, read=[str(tmp_path / "nowhere"), str(tmp_path / "db.sock")]), tmp_path)
    assert [pointer for pointer, _ in found] == ["/app/files/read/0", "/app/files/read/1"]
    assert "No such file" in found[0][1] and "is a socket" in found[1][1]


def test_an_exec_path_that_is_the_apps_writable_tmpdir_or_above_it_is_refused_by_identity(tmp_path: Path) -> None:
    """The layout's run root is a scratch directory, so no spelling rule knows it: only identity does."""
    _tree(tmp_path)
    found = _refusals(_manifest(tmp_path, exec_=[str(tmp_path / "agent" / "bin"), str(tmp_path / "run")]), tmp_path)
    assert found and found[0][0] == "/app/files/exec/1" and "which it may write" in found[0][1]
    assert "run/0123abcd/app/home" in found[0][1] or "run/0123abcd/app/tmp" in found[0][1]  # HOME, TMPDIR


def test_a_secret_every_component_reads_is_refused_naming_who(tmp_path: Path) -> None:
    """The secret lies inside what every component is given (here the Python paths)."""
    _tree(tmp_path)
    found = _refusals(_manifest(tmp_path), tmp_path, python=(str(tmp_path / "secrets"),))
    assert found == [("/doors/keys/secrets/anthropic/from", found[0][1])]
    assert "which the app is given" in found[0][1]


def test_a_secret_with_a_second_name_is_refused(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    os.link(paths["secrets"] / "anthropic", paths["agent"] / "innocent.txt")
    found = _refusals(_manifest(tmp_path), tmp_path)
    assert found and "2 hard links" in found[0][1]


def test_resolve_paths_raises_the_first_refusal_as_a_preflight_error(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "ws")
    with pytest.raises(PreflightError) as refused:
        resolve_paths(load(sample(workspace=str(tmp_path / "link"), doors__fs__hidden=DROP,
                                  app__files={})), _layout(tmp_path), PYTHON)
    assert refused.value.row == "/workspace" and "symlink" in refused.value.message


def _in_own_mount_namespace(prepare: Callable[[], None], then: Callable[[], Any]) -> Any:
    """prepare() and then() in a forked child with a mount namespace of its own (the host's are untouched)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            libc.unshare(libc.CLONE_NEWNS)
            libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
            prepare()
            os.write(wfd, json.dumps(then()).encode())
        finally:
            os._exit(0)
    os.close(wfd)
    data = b"".join(iter(lambda: os.read(rfd, 65536), b""))
    os.close(rfd)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.root
@pytest.mark.parametrize(("mounted", "words"), [("tmpfs", "holds other mounts"), ("proc", "on a proc file system")])
def test_a_path_holding_a_mount_or_on_the_kernels_own_file_system_is_refused(
        tmp_path: Path, mounted: str, words: str) -> None:
    paths = _tree(tmp_path)
    where = paths["agent"] / "inner" if mounted == "tmpfs" else paths["agent"]

    def prepare() -> None:
        where.mkdir(exist_ok=True)
        libc.mount(mounted, str(where), mounted, 0, None)

    found = _in_own_mount_namespace(prepare, lambda: _refusals(_manifest(tmp_path, exec_=[]), tmp_path))
    assert found and found[0][0] == "/app/files/read/0" and words in found[0][1], found
