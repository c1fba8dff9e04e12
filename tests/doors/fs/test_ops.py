"""The workspace on disk through openat2: the kernel refuses every way out, and writes land atomically."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator

import pytest

from doors._refusal import DoorRefused
from doors.fs._openat2 import RESOLVE_BENEATH, available, openat2
from doors.fs._ops import Workspace, kernel_refusal
from doors.fs._paths import WorkspacePath, parse_path
from doors.fs._spool import Spool

pytestmark = pytest.mark.skipif(not available(), reason="this kernel has no openat2 (Linux 5.6+)")


def p(text: str) -> WorkspacePath:
    parsed = parse_path(text)
    assert isinstance(parsed, WorkspacePath)
    return parsed


@pytest.fixture
def outside() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="sharness-fs-outside-")
    with open(os.path.join(path, "secret"), "w") as out:
        out.write("outside secret")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ws(workspace: str) -> Iterator[Workspace]:
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    try:
        yield Workspace(fd)
    finally:
        os.close(fd)


def test_raw_openat2_refuses_dotdot_with_exdev(workspace: str) -> None:
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as caught:
            openat2(fd, "../../etc/passwd", os.O_RDONLY, 0, RESOLVE_BENEATH)
        assert caught.value.errno == errno.EXDEV
        with pytest.raises(OSError) as caught:
            openat2(fd, "/etc/passwd", os.O_RDONLY, 0, RESOLVE_BENEATH)
        assert caught.value.errno == errno.EXDEV
    finally:
        os.close(fd)


@pytest.mark.parametrize("link_target", ["ABS", "../sharness-escape", "sub/../../x"])
def test_planted_symlink_out_is_refused_by_the_kernel(ws: Workspace, workspace: str, outside: str,
                                                     link_target: str) -> None:
    target = outside if link_target == "ABS" else link_target
    os.mkdir(os.path.join(workspace, "sub"))
    os.symlink(target, os.path.join(workspace, "out"))
    with pytest.raises(DoorRefused) as caught:
        ws.locate(p("out/secret"))
    assert caught.value.refusal.who == "kernel"
    assert caught.value.refusal.row == "within_root"
    with pytest.raises(DoorRefused) as parent:
        ws.locate_parent(p("out/new"))
    assert parent.value.refusal.who == "kernel"
    assert os.listdir(outside) == ["secret"]


def test_absolute_symlink_to_outside_is_exdev(ws: Workspace, workspace: str, outside: str) -> None:
    os.symlink(outside, os.path.join(workspace, "out"))
    with pytest.raises(DoorRefused) as caught:
        ws.locate(p("out/secret"))
    assert caught.value.refusal.row == "within_root" and "RESOLVE_BENEATH" in caught.value.refusal.detail


def test_magic_links_refused(ws: Workspace, workspace: str) -> None:
    os.symlink("/proc/self/root", os.path.join(workspace, "magic"))
    with pytest.raises(DoorRefused) as caught:
        ws.locate(p("magic/etc/passwd"))
    assert caught.value.refusal.row == "within_root"


def test_symlink_inside_is_followed_and_its_real_path_reported(ws: Workspace, workspace: str) -> None:
    os.mkdir(os.path.join(workspace, "real"))
    with open(os.path.join(workspace, "real", "f"), "w") as out:
        out.write("x")
    os.symlink("real", os.path.join(workspace, "alias"))
    fd, real, target = ws.locate(p("alias/f"))
    os.close(fd)
    assert real == p("real/f") and target.kind == "file"
    located = ws.locate_parent(p("alias/g"))
    os.close(located.parent_fd)
    assert located.real == p("real/g")


def test_no_symlinks_refuses_even_inside(workspace: str) -> None:
    os.mkdir(os.path.join(workspace, "real"))
    os.symlink("real", os.path.join(workspace, "alias"))
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(DoorRefused) as caught:
            Workspace(fd, no_symlinks=True).locate_parent(p("alias/x"))
        assert caught.value.refusal.row == "within_root" and caught.value.refusal.who == "kernel"
    finally:
        os.close(fd)


def test_final_symlink_is_never_followed_by_writes(ws: Workspace, workspace: str, outside: str) -> None:
    os.symlink(os.path.join(outside, "secret"), os.path.join(workspace, "link"))
    located = ws.locate_parent(p("link"))
    try:
        assert located.target.kind == "other"
        with pytest.raises(OSError) as caught:
            ws.open_append(located.parent_fd, "link", create=False)
        assert caught.value.errno == errno.ELOOP
    finally:
        os.close(located.parent_fd)
    with open(os.path.join(outside, "secret")) as kept:
        assert kept.read() == "outside secret"


def test_atomic_write_mode_and_no_temp_left(ws: Workspace, workspace: str) -> None:
    os.umask(0o077)
    located = ws.locate_parent(p("a.txt"))
    try:
        fd, name = ws.create_temp(located.parent_fd)
        ws.write_all(fd, b"content")
        written = ws.commit_write(located.parent_fd, fd, name, "a.txt", 0o644)
        os.close(fd)
    finally:
        os.close(located.parent_fd)
        os.umask(0o022)
    st = os.stat(os.path.join(workspace, "a.txt"))
    assert stat.S_IMODE(st.st_mode) == 0o644 and written.size == 7
    assert os.listdir(workspace) == ["a.txt"]
    assert written.etag == ws.locate(p("a.txt"))[2].etag


def test_temp_files_are_hidden_from_listings(ws: Workspace, workspace: str) -> None:
    open(os.path.join(workspace, ".sh-fs-00.tmp"), "w").close()
    open(os.path.join(workspace, "seen"), "w").close()
    fd, _, _ = ws.locate(p(""))
    try:
        entries, more = ws.list_batch(fd, None, 10)
        assert [name for name, _ in entries] == ["seen"] and not more
        open(os.path.join(workspace, "seen2"), "w").close()
        entries, more = ws.list_batch(fd, None, 1)
        assert [name for name, _ in entries] == ["seen"] and more
        entries, more = ws.list_batch(fd, "seen", 1)
        assert [name for name, _ in entries] == ["seen2"] and not more
    finally:
        os.close(fd)


def test_spool_moves_to_an_unnamed_file_past_its_memory_bound(ws: Workspace, workspace: str) -> None:
    spool = Spool(ws.root_fd, memory_limit=10)
    try:
        for piece in (b"0123", b"4567", b"89ab", b"cdef"):
            spool.add(piece)
        assert b"".join(spool.pieces()) == b"0123456789abcdef"
        assert os.listdir(workspace) == []  # O_TMPFILE has no name
        assert spool.head == b"0123456789abcdef"
    finally:
        spool.close()


def test_kernel_refusals_are_named() -> None:
    for code, row in ((errno.EXDEV, "within_root"), (errno.ELOOP, "within_root"), (errno.ENOENT, "not_found"),
                      (errno.ENOTEMPTY, "not_empty"), (errno.EACCES, "permission"), (errno.ENOSPC, "disk"),
                      (errno.EIO, "io")):
        refusal = kernel_refusal(OSError(code, os.strerror(code)), p("x"))
        assert refusal.row == row and refusal.who == "kernel"


def test_path_locks_serialise_and_clean_up(ws: Workspace) -> None:
    with ws.lock(p("a")):
        assert ws._locks["a"].users == 1
    assert ws._locks == {}


def test_real_paths_follow_a_workspace_moved_during_the_session(ws: Workspace, workspace: str) -> None:
    moved = workspace + "-moved"
    os.mkdir(os.path.join(workspace, "d"))
    os.rename(workspace, moved)
    try:
        located = ws.locate_parent(p("d/x"))
        os.close(located.parent_fd)
        assert located.real == p("d/x")
    finally:
        os.rename(moved, workspace)


def test_moving_a_directory_into_itself_is_a_named_conflict(ws: Workspace, workspace: str) -> None:
    os.mkdir(os.path.join(workspace, "d"))
    source, dest = ws.locate_parent(p("d")), ws.locate_parent(p("d/inner"))
    try:
        with pytest.raises(OSError) as caught:
            ws.rename(source, dest)
        assert kernel_refusal(caught.value, p("d")).row == "invalid"
    finally:
        os.close(source.parent_fd)
        os.close(dest.parent_fd)


def test_mkdir_gets_its_exact_mode_whatever_the_umask(ws: Workspace, workspace: str) -> None:
    old = os.umask(0o077)
    try:
        ws.mkdir(ws.root_fd, "d")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(os.path.join(workspace, "d")).st_mode) == 0o755
