"""The fs door's temporary files: unnamed while a body arrives, a name only for the commit's rename, and a
sweep at start of the names a killed door (or a file system without O_TMPFILE) left behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from doors.fs._ops import Workspace
from doors.fs._paths import WorkspacePath, parse_path

TEMP = ".sh-fs-0123456789abcdef.tmp"


@pytest.fixture
def root() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="sharness-fs-temp-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _workspace(root: str) -> Workspace:
    return Workspace(os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))


def _parent(ws: Workspace, text: str) -> int:
    path = parse_path(text)
    assert isinstance(path, WorkspacePath)
    return ws.locate_parent(path).parent_fd


def test_a_body_in_flight_has_no_name_and_vanishes_with_its_fd(root: str) -> None:
    ws = _workspace(root)
    parent = _parent(ws, "a.txt")
    fd, name = ws.create_temp(parent)
    os.write(fd, b"x" * 4096)
    assert name == "" and os.listdir(root) == []
    os.close(fd)  # what a killed door's fds do
    assert os.listdir(root) == []
    os.close(parent)


def test_commit_links_the_unnamed_file_over_the_target(root: str) -> None:
    with open(os.path.join(root, "a.txt"), "w") as old:
        old.write("old")
    ws = _workspace(root)
    parent = _parent(ws, "a.txt")
    fd, name = ws.create_temp(parent)
    os.write(fd, b"new")
    written = ws.commit_write(parent, fd, name, "a.txt", 0o644)
    os.close(fd)
    os.close(parent)
    assert os.listdir(root) == ["a.txt"] and written.size == 3
    with open(os.path.join(root, "a.txt")) as new:
        assert new.read() == "new"


def test_without_tmpfile_the_fallback_is_named_and_the_next_start_sweeps_it(root: str) -> None:
    ws = _workspace(root)
    ws._tmpfile = False  # as on a file system without O_TMPFILE (vfat, most FUSE servers)
    os.mkdir(os.path.join(root, "sub"))
    parent = _parent(ws, "sub/a.txt")
    fd, name = ws.create_temp(parent)
    os.write(fd, b"half a body")
    os.close(fd)  # the door died before the commit: the name stays
    os.close(parent)
    assert os.listdir(os.path.join(root, "sub")) == [name]
    assert _workspace(root).sweep_temp() == 1
    assert os.listdir(os.path.join(root, "sub")) == []


def test_the_sweep_takes_only_the_doors_own_regular_files(root: str) -> None:
    outside = tempfile.mkdtemp(prefix="sharness-fs-outside-")
    try:
        open(os.path.join(outside, TEMP), "w").close()
        os.symlink(outside, os.path.join(root, "link"))
        os.makedirs(os.path.join(root, "deep", "er"))
        open(os.path.join(root, "deep", "er", TEMP), "w").close()
        os.mkdir(os.path.join(root, "deep", ".sh-fs-feedfacefeedface.tmp"))  # a directory: not the door's
        for kept in (".sh-fs-.txt", "notes.tmp", ".sh-fs-1.tmp.bak"):
            open(os.path.join(root, kept), "w").close()
        assert _workspace(root).sweep_temp() == 1
        assert os.listdir(os.path.join(root, "deep", "er")) == []
        assert os.listdir(outside) == [TEMP]  # a symlink out is never followed
        assert sorted(os.listdir(root)) == [".sh-fs-.txt", ".sh-fs-1.tmp.bak", "deep", "link", "notes.tmp"]
    finally:
        shutil.rmtree(outside)
