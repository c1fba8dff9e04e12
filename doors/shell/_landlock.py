"""Each command's own Landlock layer, on top of the door's: cffi in ABI mode (no launcher import).

The door is already confined by the launcher (its reads, its exec paths, its ports); a command inherits
that and gets one more domain, made once at start and entered in the child before execve:
- writing only beneath its HOME and TMPDIR (the scratch tmpfs), to /dev/null and /dev/tty: not the cgroup
  directories the door itself may write (so a command cannot move itself out of its cgroup);
- signals and abstract Unix sockets scoped to its own domain: a command cannot signal, ptrace or reach the
  door, which is outside it.
"""

from __future__ import annotations

import os
import stat
import struct

from doors._ffi import ffi as _ffi  # out-of-line: no C parser at import (doors/_ffi_cdefs.py)

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # x86_64 and aarch64 alike
RULE_PATH_BENEATH = 1
FS_WRITE_FILE, FS_REMOVE_DIR, FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
FS_MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
WRITE_RIGHTS = FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE | FS_REFER | FS_TRUNCATE
FILE_WRITE_RIGHTS = FS_WRITE_FILE | FS_TRUNCATE  # what a rule on a non-directory may carry
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
MIN_ABI = 6  # scoping came with ABI 6
# Only mypy reads this: a spawned zygote imports this module, and `typing` would cost it ~15 ms of CPU
# (doors/shell/_zygote.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_libc: Any = _ffi.dlopen(None)


def _long(value: int) -> Any:
    return _ffi.cast("long", value)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = _ffi.errno
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI (LANDLOCK_CREATE_RULESET_VERSION); OSError when Landlock is off."""
    return _check(int(_libc.syscall(_long(_SYS_CREATE_RULESET), _ffi.NULL, _long(0), _long(1))),
                  "landlock_create_ruleset(version)")


def command_ruleset(writable: tuple[str, ...]) -> int:
    """A ruleset fd (O_CLOEXEC) writing only beneath `writable` and scoping signals and abstract sockets."""
    abi = abi_version()
    if abi < MIN_ABI:
        raise OSError(0, f"Landlock ABI {abi} has no signal scoping (ABI {MIN_ABI})")
    attr = _ffi.new("char[]", struct.pack("<QQQ", WRITE_RIGHTS, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL))
    ruleset = _check(int(_libc.syscall(_long(_SYS_CREATE_RULESET), attr, _long(24), _long(0))),
                     "landlock_create_ruleset")
    try:
        for path in writable:
            _allow_write(ruleset, path)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _allow_write(ruleset: int, path: str) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rights = WRITE_RIGHTS if stat.S_ISDIR(os.fstat(fd).st_mode) else FILE_WRITE_RIGHTS
        rule = _ffi.new("char[]", struct.pack("<Qi", rights, fd))  # the kernel's struct is packed: 12 bytes
        _check(int(_libc.syscall(_long(_SYS_ADD_RULE), _long(ruleset), _long(RULE_PATH_BENEATH), rule, _long(0))),
               f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def restrict_self(ruleset: int) -> None:
    """Enter the ruleset's domain (no_new_privs is already set: the launcher set it for the door)."""
    _check(int(_libc.syscall(_long(_SYS_RESTRICT_SELF), _long(ruleset), _long(0))), "landlock_restrict_self")
