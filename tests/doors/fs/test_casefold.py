"""doors/fs/_casefold.py: the door finds the directories that fold case, and its rows then hold under any case."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from doors.fs import _casefold
from doors.fs._casefold import casefold_dirs, fs_type, has_casefold_flag
from doors.fs._paths import ROOT, WorkspacePath
from tests import casefold_ext4
from tests.doors.fs.conftest import make_door

ROWS = {"read_only": [".git"], "hidden": [".env"], "append_only": ["log"]}


def _dirfd(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def test_fs_type_is_what_statfs_says(workspace: str) -> None:
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    try:
        said = subprocess.run(["stat", "-f", "-c", "%t", workspace], capture_output=True, text=True, check=True)
        assert fs_type(fd) == int(said.stdout, 16)
    finally:
        os.close(fd)


def test_an_ordinary_directory_does_not_fold(workspace: str) -> None:
    os.mkdir(os.path.join(workspace, ".git"))
    fd = _dirfd(workspace)
    try:
        assert has_casefold_flag(fd) is False
        prefixes = [WorkspacePath((".git",)), WorkspacePath(("a", "b", "c"))]
        assert casefold_dirs(fd, prefixes) == frozenset()
    finally:
        os.close(fd)


def test_on_a_file_system_that_folds_every_lookup_each_directory_on_a_prefix_path_folds(
        workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_casefold, "fs_type", lambda fd: 0x4D44)  # vfat's magic (no vfat in this kernel)
    fd = _dirfd(workspace)
    try:
        found = casefold_dirs(fd, [WorkspacePath((".git",)), WorkspacePath(("a", "b", "c"))])
        assert found == {ROOT, WorkspacePath(("a",)), WorkspacePath(("a", "b"))}
    finally:
        os.close(fd)


async def test_the_door_judges_with_what_it_found(workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_casefold, "fs_type", lambda fd: 0x4D44)
    door = make_door(workspace, ROWS)
    try:
        response = await door.request("PUT", "/v0/fs/files/.GIT/config", b"x")
        assert (response.status, json.loads(response.body)["error"]) == (403, "read_only")
    finally:
        door.close()


skip_reason = casefold_ext4.unavailable()
needs_casefold = pytest.mark.skipif(skip_reason is not None, reason=skip_reason or "")


async def _status(door: Any, method: str, target: str, body: bytes = b"") -> tuple[int, str | None]:
    response = await door.request(method, target, body)
    return response.status, (json.loads(response.body).get("error") if response.status >= 400 else None)


@pytest.mark.root
@needs_casefold
async def test_read_only_and_hidden_hold_under_another_case_on_a_casefold_ext4_root() -> None:
    with casefold_ext4.casefold_mount() as mount:
        root = casefold_ext4.casefold_dir(mount / "ws")
        (root / ".git").mkdir()
        (root / ".git" / "config").write_text("[core]\n")
        (root / ".env").write_text("TOKEN=x\n")
        assert (root / ".GIT" / "config").read_text() == "[core]\n"  # the kernel folds: one file, two spellings
        door = make_door(str(root), ROWS)
        try:
            assert door.api.rows.casefold_dirs == {ROOT}
            assert await _status(door, "PUT", "/v0/fs/files/.GIT/config", b"x") == (403, "read_only")
            assert await _status(door, "DELETE", "/v0/fs/files/.Git") == (403, "read_only")
            assert await _status(door, "GET", "/v0/fs/files/.ENV") == (403, "hidden")
            listing = json.loads((await door.request("GET", "/v0/fs/list")).body)
            assert [entry["name"] for entry in listing["entries"]] == [".git"]
        finally:
            door.close()
        assert (root / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.root
@needs_casefold
async def test_only_the_folding_directory_folds_on_a_casefold_ext4() -> None:
    with casefold_ext4.casefold_mount() as mount:
        root = mount / "ws"
        root.mkdir()
        casefold_ext4.casefold_dir(root / "sub")
        (root / "sub" / ".git").mkdir()
        door = make_door(str(root), {"read_only": ["sub/.git", ".git"]})
        try:
            assert door.api.rows.casefold_dirs == {WorkspacePath(("sub",))}
            assert await _status(door, "PUT", "/v0/fs/files/sub/.GIT/x", b"x") == (403, "read_only")
            # The root does not fold: .GIT there is another directory than .git, and the door allows it.
            assert await _status(door, "POST", "/v0/fs/mkdir/.GIT") == (201, None)
        finally:
            door.close()
        assert not (root / "sub" / ".git" / "x").exists() and (root / ".GIT").is_dir()
