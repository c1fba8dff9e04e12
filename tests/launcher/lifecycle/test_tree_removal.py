"""Tree removal holds against what a hostile owner builds: depth, links out, 000 modes, attributes, mounts."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import resource
import socket
import stat
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher.lifecycle import tree_removal
from launcher.lifecycle.journal_removers import remove_dir
from launcher.lifecycle.tree_removal import (
    FS_APPEND_FL,
    FS_IMMUTABLE_FL,
    FS_IOC_GETFLAGS,
    FS_IOC_SETFLAGS,
    TreeRemovalError,
    remove_tree,
)

DEPTH = 5000
FD_LIMIT = 64  # the child removing the tree may hold no more than this many fds


def _remove(parent: Path, name: str) -> None:
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        remove_tree(fd, name)
    finally:
        os.close(fd)


def _remove_in_child(parent: Path, name: str) -> str:
    """Teardown's `dir` remover in a forked child whose RLIMIT_NOFILE is FD_LIMIT; '' or the error."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        message = b""
        try:
            os.closerange(3, write_end)  # what the test process holds is not the removal's to count
            os.closerange(write_end + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))
            remove_dir(str(parent / name), (str(parent),), ())
        except BaseException as exc:  # everything goes back to the test, which asserts on it
            message = f"{type(exc).__name__}: {exc}".encode()[:4000] or b"?"
        os.write(write_end, message)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    return message


ACCOUNT_FILES = ("passwd", "shadow", "group", "gshadow", "subuid", "subgid", ".pwd.lock")


def _snapshot(path: str) -> dict[str, tuple[int, int, int]]:
    """Every entry directly in `path`: (inode, mode, mtime_ns), and the content hash of its regular files;
    the account files and /etc/netns are left out (sessions running beside this test rewrite them: iproute2
    makes /etc/netns/<name> entries for named netns)."""
    found = {}
    for entry in os.scandir(path):
        if entry.name.startswith(ACCOUNT_FILES) or entry.name == "netns":
            continue
        st = entry.stat(follow_symlinks=False)
        digest = 0
        if stat.S_ISREG(st.st_mode):
            with open(entry.path, "rb") as f:
                digest = int.from_bytes(hashlib.sha256(f.read()).digest()[:8], "big")
        found[entry.name] = (st.st_ino, st.st_mode, st.st_mtime_ns + digest)
    return found


def _chain(fd: int, depth: int) -> int:
    """mkdir `d` under `fd`, `depth` times, through fds (the path is far beyond PATH_MAX); the deepest fd."""
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    return fd


def _plant(fd: int, level: int, outside: Path, keep: Path) -> None:
    """What a hostile owner leaves at one level of the chain."""
    os.symlink("/etc", "etc", dir_fd=fd)
    os.symlink("/etc/passwd", f"passwd-{level}", dir_fd=fd)
    os.symlink(str(outside), "outside", dir_fd=fd)
    os.link(keep, f"hardlink-{level}", dst_dir_fd=fd)
    os.mkfifo("fifo", dir_fd=fd)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(f"/proc/self/fd/{fd}/sock")
    os.mkdir("locked", dir_fd=fd)
    os.mkdir(f"/proc/self/fd/{fd}/locked/inner")
    Path(f"/proc/self/fd/{fd}/locked/inner/file").write_bytes(b"x")
    for relative in ("locked/inner/file", "locked/inner", "locked"):
        os.chown(relative, 65534, 65534, dir_fd=fd, follow_symlinks=False)
        os.chmod(f"/proc/self/fd/{fd}/{relative}", 0)


def _chattr(dir_fd: int, name: str, flag: int) -> None:
    """chattr +i / +a on `name` in `dir_fd` (chattr itself takes paths, and these are past PATH_MAX)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        flags = struct.unpack("=i4x", fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8)))[0]
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("=i4x", flags | flag))
        assert struct.unpack("=i4x", fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8)))[0] & flag
    finally:
        os.close(fd)


def _hostile_tree(base: Path, outside: Path, keep: Path) -> None:
    top = base / "tree"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    done = 0
    for level in (10, 17, 2500, DEPTH):
        fd = _chain(fd, level - done)
        done = level
        _plant(fd, level, outside, keep)
    os.mkdir("only-grows", dir_fd=fd)
    Path(f"/proc/self/fd/{fd}/only-grows/log").write_bytes(b"x")
    Path(f"/proc/self/fd/{fd}/frozen").write_bytes(b"x")
    for name, flag in (("only-grows", FS_APPEND_FL), ("frozen", FS_IMMUTABLE_FL), (".", FS_IMMUTABLE_FL)):
        _chattr(fd, name, flag)
    os.close(fd)


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    outside, keep = tmp_path / "outside", tmp_path / "keep"
    outside.mkdir()
    (outside / "precious").write_bytes(b"precious")
    keep.write_bytes(b"kept")
    base = tmp_path / "base"
    base.mkdir()
    yield base, outside, keep
    with contextlib.suppress(OSError):
        _remove(tmp_path, "base")  # what a failing test left (it clears the attributes that rm cannot)
    subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)


def test_an_ordinary_tree_goes_and_links_out_of_it_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "keep").write_bytes(b"keep")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "file").write_bytes(b"x" * 10)
    (tree / "a" / "out").symlink_to(outside)
    (tree / "a" / "b" / "keep").symlink_to(outside / "sub" / "keep")
    (tree / "dangling").symlink_to(tmp_path / "nothing")
    _remove(tmp_path, "tree")
    assert not tree.exists()
    assert (outside / "sub" / "keep").read_bytes() == b"keep"
    _remove(tmp_path, "tree")  # gone is success


def test_a_symlink_in_place_of_the_tree_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "keep").write_bytes(b"keep")
    (tmp_path / "tree").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        _remove(tmp_path, "tree")
    assert (tmp_path / "target" / "keep").read_bytes() == b"keep"


def test_deep_levels_are_reached_again_through_dotdot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no level keeping its fd, every step up goes through '..' and the identity check."""
    monkeypatch.setattr(tree_removal, "FD_LEVELS", 0)
    (tmp_path / "tree").mkdir()
    fd = _chain(os.open(tmp_path / "tree", os.O_RDONLY | os.O_DIRECTORY), 50)
    for name in ("x", "y"):
        os.mkdir(name, dir_fd=fd)
        Path(f"/proc/self/fd/{fd}/{name}/f").write_bytes(b"1")
    os.close(fd)
    _remove(tmp_path, "tree")
    assert not (tmp_path / "tree").exists()


@pytest.mark.root
def test_a_5000_deep_hostile_tree_goes_with_64_fds_and_etc_untouched(hostile: tuple[Path, Path, Path]) -> None:
    """Four levels (10, 17, 2 500 and 5 000 deep) hold symlinks to /etc, /etc/passwd and a directory outside,
    a hard link to a file outside, a FIFO, a socket and a 000 directory of nobody's holding a 000 file; the
    deepest level and a file in it are immutable, a directory there append-only (chattr, as only root can)."""
    base, outside, keep = hostile
    _hostile_tree(base, outside, keep)
    etc_before = _snapshot("/etc")
    assert _remove_in_child(base, "tree") == ""
    assert os.listdir(base) == []
    assert _snapshot("/etc") == etc_before
    assert all(os.path.isfile(f"/etc/{name}") for name in ACCOUNT_FILES[:4])  # a link to passwd was unlinked
    assert (outside / "precious").read_bytes() == b"precious" and keep.read_bytes() == b"kept"
    assert keep.stat().st_nlink == 1


@pytest.mark.root
def test_the_old_recursive_removal_fails_on_such_a_tree(hostile: tuple[Path, Path, Path]) -> None:
    """The premise: shutil.rmtree (what teardown used) gives up on this tree, leaving it there."""
    import shutil

    base, outside, keep = hostile
    _hostile_tree(base, outside, keep)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(RecursionError):
            shutil.rmtree("tree", dir_fd=fd)
    finally:
        os.close(fd)
    assert (base / "tree").exists()


@pytest.mark.root
def test_a_mount_point_inside_is_not_crossed(tmp_path: Path) -> None:
    (tmp_path / "tree" / "a" / "mnt").mkdir(parents=True)
    (tmp_path / "tree" / "a" / "file").write_bytes(b"x")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sh-test-tree", str(tmp_path / "tree" / "a" / "mnt")],
                   check=True)
    try:
        (tmp_path / "tree" / "a" / "mnt" / "kept").write_bytes(b"kept")
        with pytest.raises(TreeRemovalError, match="mount point"):
            _remove(tmp_path, "tree")
        assert (tmp_path / "tree" / "a" / "mnt" / "kept").read_bytes() == b"kept"
    finally:
        subprocess.run(["umount", str(tmp_path / "tree" / "a" / "mnt")], check=True)
    _remove(tmp_path, "tree")
    assert not (tmp_path / "tree").exists()
