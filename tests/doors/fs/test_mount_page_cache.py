"""What the kernel caches of writes through the mount: a write-only handle's bytes go to the door without a copy in
the kernel's page cache (direct_io: such a handle can be neither read nor mapped), a read-write one's pass through
it (so it can be mapped). Watched with mincore(2) on a reader's mapping of the same file."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
from pathlib import Path

import pytest

from tests.doors.fs._mount import mounted, needs_mount

pytestmark = [pytest.mark.root, needs_mount]

SIZE = 4 * mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)


def _resident_pages(mapped: mmap.mmap) -> int:
    """How many pages of the file behind `mapped` the kernel holds in its page cache (none of them copied yet)."""
    vec = (ctypes.c_ubyte * (SIZE // mmap.PAGESIZE))()
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapped))
    if _libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(SIZE), vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return sum(page & 1 for page in vec)


def _setup(root: str) -> None:
    Path(f"{root}/data.bin").write_bytes(b"a" * SIZE)


def _cached_after_writing(point: str, access: int) -> tuple[int, int]:
    """Pages cached after writing the whole file through a handle opened with `access`; mmap's errno on it."""
    reader = os.open(f"{point}/data.bin", os.O_RDONLY)
    mapped = mmap.mmap(reader, SIZE, access=mmap.ACCESS_COPY)  # private and writable: ctypes can take its address
    writer = os.open(f"{point}/data.bin", access)
    try:
        os.pwrite(writer, b"b" * SIZE, 0)
        cached = _resident_pages(mapped)
        try:
            mmap.mmap(writer, SIZE, mmap.MAP_SHARED, mmap.PROT_READ).close()
            mapping = 0
        except OSError as exc:
            mapping = exc.errno or -1
    finally:
        os.close(writer)
        mapped.close()
        os.close(reader)
    return cached, mapping


def test_write_only_writes_skip_the_page_cache_and_read_write_ones_can_be_mapped() -> None:
    with mounted({}, _setup) as mount:
        assert mount.run(lambda point: _cached_after_writing(point, os.O_WRONLY)) == (0, errno.EACCES)
        cached, mapping = mount.run(lambda point: _cached_after_writing(point, os.O_RDWR))
        assert (cached, mapping) == (SIZE // mmap.PAGESIZE, 0)
        assert Path(f"{mount.workspace}/data.bin").read_bytes() == b"b" * SIZE
