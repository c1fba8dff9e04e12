"""openat2(2) and renameat2(2) through cffi in ABI mode (no compiler, no launcher import)."""

from __future__ import annotations

import functools
import os
import platform
from typing import Any

from doors._ffi import ffi as _ffi  # out-of-line: no C parser at import (doors/_ffi_cdefs.py)

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RENAME_NOREPLACE = 1 << 0
AT_FDCWD = -100

# The same numbers on x86_64 and aarch64 (both use the unified table for these late syscalls).
_SYS_OPENAT2 = 437
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}.get(platform.machine(), 316)

_libc: Any = _ffi.dlopen(None)


def _long(value: int) -> Any:
    # Every variadic syscall argument is passed as a long: the kernel reads full registers.
    return _ffi.cast("long", value)


def _cstr(path: str) -> Any:
    return _ffi.new("char[]", os.fsencode(path))


@functools.lru_cache(maxsize=64)
def _how(flags: int, mode: int, resolve: int) -> Any:
    # The kernel only reads it: one struct per combination (a handful: the door's flags are fixed), kept alive here.
    return _ffi.new("struct open_how *", {"flags": flags, "mode": mode, "resolve": resolve})


_OPENAT2 = _long(_SYS_OPENAT2)
_HOW_SIZE = _long(_ffi.sizeof("struct open_how"))


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0, resolve: int = 0) -> int:
    """Open `path` relative to `dir_fd` with `resolve` flags; raise OSError with the kernel's errno."""
    fd = int(_libc.syscall(_OPENAT2, _long(dir_fd), _cstr(path), _how(flags, mode, resolve), _HOW_SIZE))
    if fd < 0:
        err = _ffi.errno
        raise OSError(err, f"openat2: {os.strerror(err)}", path)
    return fd


def renameat2(old_dir: int, old: str, new_dir: int, new: str, flags: int = 0) -> None:
    """renameat2(2); RENAME_NOREPLACE makes "destination exists" an atomic EEXIST."""
    result = int(
        _libc.syscall(_long(_SYS_RENAMEAT2), _long(old_dir), _cstr(old), _long(new_dir), _cstr(new), _long(flags))
    )
    if result < 0:
        err = _ffi.errno
        raise OSError(err, f"renameat2: {os.strerror(err)}", old)


def available() -> bool:
    """True when this kernel has openat2 (Linux 5.6+)."""
    try:
        os.close(openat2(AT_FDCWD, "/", os.O_PATH | os.O_DIRECTORY, 0, RESOLVE_NO_MAGICLINKS))
    except OSError:
        return False
    return True
