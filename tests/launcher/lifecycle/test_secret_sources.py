"""The keys door's sources, opened by the launcher as root before anything is created: only a root-owned 0600
regular file reached without a symlink is opened, and the launcher never reads it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from launcher.lifecycle.preflight import PreflightError
from launcher.lifecycle.preflight_sealed import open_secret_sources

pytestmark = pytest.mark.root

VALUE = b"sk-test-value-never-read"


def _secret(tmp_path: Path, mode: int = 0o600, uid: int = 0) -> Path:
    path = tmp_path / "anthropic.key"
    path.write_bytes(VALUE)
    path.chmod(mode)
    os.chown(path, uid, 0)
    return path


def test_a_root_0600_file_is_opened_read_only_and_not_read(tmp_path: Path) -> None:
    path = _secret(tmp_path)
    sources = open_secret_sources({"anthropic": {"from": str(path)}})
    try:
        assert sources.machine_key is None  # no secret is sealed
        fd = sources.fds["anthropic"]
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # the launcher did not read it
        assert os.get_inheritable(fd) is False
        with pytest.raises(OSError):
            os.write(fd, b"x")
        assert os.pread(fd, 100, 0) == VALUE  # the door gets the whole file
    finally:
        sources.close()


def _symlink(tmp_path: Path) -> Path:
    link = tmp_path / "link.key"
    link.symlink_to(_secret(tmp_path))
    return link


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.key"
    os.mkfifo(path, 0o600)
    return path


REFUSED: list[tuple[str, Callable[[Path], Path], str]] = [
    ("missing", lambda d: d / "absent.key", "cannot be opened"),
    ("group-readable", lambda d: _secret(d, 0o640), "mode 0640"),
    ("world-readable", lambda d: _secret(d, 0o604), "mode 0604"),
    ("group-writable", lambda d: _secret(d, 0o620), "mode 0620"),
    ("not root's", lambda d: _secret(d, 0o600, 65534), "owned by uid 65534"),
    ("a symlink", _symlink, "is a symlink"),
    ("a directory", lambda d: d, "not a regular file"),
    ("a fifo", _fifo, "not a regular file"),
]


@pytest.mark.parametrize(("what", "make", "said"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_bad_source_is_refused_naming_the_row(tmp_path: Path, what: str, make: Callable[[Path], Path],
                                                said: str) -> None:
    good = tmp_path / "good"
    good.mkdir()
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(PreflightError) as caught:
        # "aaa" sorts first, so it is opened before the bad one: it must be closed again.
        open_secret_sources({"aaa": {"from": str(_secret(good))}, "zzz": {"from": str(make(tmp_path))}})
    assert caught.value.row == "doors.keys.secrets.zzz.from" and said in caught.value.message
    assert "zzz" in caught.value.message and VALUE.decode() not in caught.value.message
    assert set(os.listdir("/proc/self/fd")) == before
