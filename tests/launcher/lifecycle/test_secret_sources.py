"""The keys door's sources, opened by the launcher as root before anything is created: only a root-owned 0600
regular file reached without a symlink is opened, and the launcher never reads it; a sealed-store source is the
sealed file and the machine key, refused here when its header, length, name or key id does not match."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from doors.keys import MachineKey, seal_value
from launcher.commands._secret_store import ensure_store, machine_key, write_sealed
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


# -- `from: "sealed:NAME"`: the sealed file and the machine key, two fds; what needs no key is checked here --

def _store(tmp_path: Path, name: str = "anthropic") -> Path:
    root = tmp_path / "store"
    ensure_store(str(root))
    write_sealed(str(root), name, seal_value(machine_key(str(root)), name, VALUE, 1_800_000_000), replace=True)
    return root


def test_a_sealed_source_is_two_fds_and_neither_is_read(tmp_path: Path) -> None:
    root = _store(tmp_path)
    sources = open_secret_sources({"anthropic": {"from": "sealed:anthropic"}}, root=str(root))
    try:
        assert sources.machine_key is not None
        for fd in (sources.fds["anthropic"], sources.machine_key):
            assert os.lseek(fd, 0, os.SEEK_CUR) == 0 and os.get_inheritable(fd) is False
        assert os.pread(sources.fds["anthropic"], 1 << 20, 0) == (root / "anthropic.sealed").read_bytes()
        assert os.pread(sources.machine_key, 1 << 20, 0) == (root / "machine.key").read_bytes()
    finally:
        sources.close()


def _truncate(root: Path) -> None:
    path = root / "anthropic.sealed"
    path.write_bytes(path.read_bytes()[:-1])


def _foreign(root: Path) -> None:
    (root / "anthropic.sealed").write_bytes(seal_value(MachineKey.generate(), "anthropic", VALUE, 1))


def _renamed(root: Path) -> None:
    (root / "anthropic.sealed").write_bytes((root / "openai.sealed").read_bytes())


SEALED_REFUSED: list[tuple[str, Callable[[Path], object], str]] = [
    ("truncated", _truncate, "truncated"),
    ("sealed to another key", _foreign, "sealed to machine key"),
    ("another secret's file", _renamed, "holds secret 'openai'"),
    ("not a sealed file", lambda root: (root / "anthropic.sealed").write_bytes(VALUE), "not a sealed file"),
    ("missing", lambda root: (root / "anthropic.sealed").unlink(), "cannot be opened"),
    ("group-readable", lambda root: (root / "anthropic.sealed").chmod(0o640), "mode 0640"),
    ("no machine key", lambda root: (root / "machine.key").unlink(), "machine.key, cannot be opened"),
    ("machine key world-readable", lambda root: (root / "machine.key").chmod(0o604), "mode 0604"),
    ("machine key header changed", lambda root: (root / "machine.key").write_bytes(b"x" * 200),
     "machine key header"),
]


@pytest.mark.parametrize(("what", "spoil", "said"), SEALED_REFUSED, ids=[r[0] for r in SEALED_REFUSED])
def test_a_bad_sealed_source_is_refused_naming_the_row(tmp_path: Path, what: str, spoil: Callable[[Path], object],
                                                       said: str) -> None:
    root = _store(tmp_path)
    write_sealed(str(root), "openai", seal_value(machine_key(str(root)), "openai", VALUE, 1), replace=True)
    spoil(root)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(PreflightError) as caught:
        open_secret_sources({"aaa": {"from": str(_secret(tmp_path))}, "zzz": {"from": "sealed:anthropic"}},
                            root=str(root))
    assert caught.value.row == "doors.keys.secrets.zzz.from" and said in caught.value.message, caught.value.message
    assert VALUE.decode() not in caught.value.message + caught.value.hint
    assert set(os.listdir("/proc/self/fd")) == before
