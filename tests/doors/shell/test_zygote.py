"""doors/shell/_zygote.py: what a zygote does per command after its launch arrives is only the command's own steps."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from doors.shell import _zygote
from doors.shell._spawn import ZYGOTE_PATH


def test_the_spawned_zygote_imports_nothing_when_it_execs() -> None:
    """os.execvpe's PATH lookup imports `warnings` on first use: a spawned zygote pays that between commands."""
    probe = ("import os, sys\n"
             f"sys.path += {list(ZYGOTE_PATH)!r}\n"  # as the door spawns it (ZYGOTE_MAIN)
             "import doors.shell._zygote\n"
             "before = set(sys.modules)\n"
             "os.get_exec_path({'PATH': '/usr/bin:/bin'})\n"
             "print(sorted(set(sys.modules) - before))\n")
    ran = subprocess.run([sys.executable, "-S", "-I", "-c", probe], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "[]"


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("test-launch", os.MFD_CLOEXEC)
    os.pwrite(fd, data, 0)
    return fd


def test_a_launch_is_read_whole_from_its_memfd() -> None:
    blob = _zygote.encode_launch(["echo", "x" * 100_000], {"A": "b"}, False)
    fd = _memfd(blob)
    try:
        assert _zygote.decode_launch(_zygote._read_all(fd)) == ([b"echo", b"x" * 100_000], {b"A": b"b"}, False)
    finally:
        os.close(fd)


def test_a_launch_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_zygote, "MAX_LAUNCH_BYTES", 16)
    fd = _memfd(b"0\x001\x00" + b"x" * 16)
    try:
        with pytest.raises(OSError) as raised:
            _zygote._read_all(fd)
        assert raised.value.errno == errno.E2BIG
    finally:
        os.close(fd)
