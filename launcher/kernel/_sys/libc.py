"""libc and raw syscalls through cffi ABI mode: setns, prctl, close_range, openat2, the mount API, Landlock."""

from __future__ import annotations

import functools
import os
import struct
from typing import Any

from launcher.kernel._sys._ffi import ffi

_libc: Any = ffi.dlopen(None)

# Syscalls numbered 424 and above are the same on every architecture (asm-generic unification).
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_CLOSE_RANGE = 436
SYS_OPENAT2 = 437
SYS_FSOPEN = 430
SYS_FSCONFIG = 431
SYS_FSMOUNT = 432
SYS_MOUNT_SETATTR = 442
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446

CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
PR_SET_PDEATHSIG = 1
PR_GET_PDEATHSIG = 2
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ffi.errno
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return int(result)


def _long(value: int) -> Any:
    return ffi.cast("long", value)


def raw_syscall(number: int, *args: int) -> int:
    """Call syscall(number, args...) with every argument passed as a C long; -1 with errno on failure."""
    return int(_libc.syscall(_long(number), *(_long(a) for a in args)))


def setns(fd: int, nstype: int) -> None:
    """Move the calling thread into the namespace fd refers to."""
    _check(_libc.setns(fd, nstype), "setns")


def unshare(flags: int) -> None:
    """Give the calling thread new namespaces of the kinds in flags."""
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2); None passes NULL."""
    def c(text: str | None) -> Any:
        return ffi.NULL if text is None else text.encode()

    _check(_libc.mount(c(source), target.encode(), c(fstype), flags, c(data)), f"mount {target}")


# pivot_root and umount2 have no libc wrapper we can rely on; their numbers differ by architecture.
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_SYS_UMOUNT2 = {"x86_64": 166, "aarch64": 39}
MNT_DETACH = 2


def _arch_number(table: dict[str, int], name: str) -> int:
    machine = os.uname().machine
    if machine not in table:
        raise OSError(38, f"{name}: no syscall number known for {machine}")
    return table[machine]


def pivot_root(new_root: str, put_old: str) -> None:
    """pivot_root(2): make new_root the root of this mount namespace, the old one at put_old."""
    number = _arch_number(_SYS_PIVOT_ROOT, "pivot_root")
    new, old = ffi.new("char[]", new_root.encode()), ffi.new("char[]", put_old.encode())
    _check(_libc.syscall(_long(number), new, old), "pivot_root")


def umount2(target: str, flags: int) -> None:
    """umount2(2)."""
    number = _arch_number(_SYS_UMOUNT2, "umount2")
    _check(_libc.syscall(_long(number), ffi.new("char[]", target.encode()), _long(flags)), f"umount {target}")


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    """prctl(2); raises OSError on failure."""
    return _check(_libc.prctl(option, arg2, arg3, arg4, arg5), f"prctl({option})")


def parent_death_signal() -> int:
    """PR_GET_PDEATHSIG: the signal this process gets when its parent dies (0: none)."""
    sig = ffi.new("int *")
    _check(_libc.prctl(PR_GET_PDEATHSIG, ffi.cast("unsigned long", sig), 0, 0, 0), "prctl(PR_GET_PDEATHSIG)")
    return int(sig[0])


def close_range(first: int, last: int) -> None:
    """Close every fd in [first, last]."""
    _check(raw_syscall(SYS_CLOSE_RANGE, first, last, 0), "close_range")


def openat2_available() -> bool:
    """True when openat2(2) exists: a call with a NULL how-pointer fails with EFAULT, not ENOSYS."""
    if raw_syscall(SYS_OPENAT2, -100, 0, 0, 24) >= 0:  # pragma: no cover - cannot succeed on a NULL path
        return True
    return ffi.errno != 38  # ENOSYS


AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
OPEN_TREE_CLONE = 1
MOVE_MOUNT_F_EMPTY_PATH = 0x04
MOVE_MOUNT_T_EMPTY_PATH = 0x40
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_IDMAP = 0x00100000


def _address(buffer: Any) -> int:
    return int(ffi.cast("long", buffer))


def _path(path: str) -> Any:
    return ffi.new("char[]", os.fsencode(path))


_EMPTY = _path("")  # the "" of every AT_EMPTY_PATH call, made once


@functools.cache
def _open_how(flags: int, resolve: int) -> Any:
    return ffi.from_buffer(struct.pack("=QQQ", flags | os.O_CLOEXEC, 0, resolve))  # struct open_how


def openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """openat2(2): open `path` from `dir_fd` under the RESOLVE_* flags in `resolve`; the new fd."""
    how = _open_how(flags, resolve)
    return _check(_libc.syscall(_long(SYS_OPENAT2), _long(dir_fd), _path(path), how, _long(24)), f"openat2 {path}")


def open_tree(fd: int, flags: int) -> int:
    """open_tree(2) on what `fd` names (AT_EMPTY_PATH): with OPEN_TREE_CLONE a detached copy of that one mount."""
    flags |= AT_EMPTY_PATH | os.O_CLOEXEC
    return _check(_libc.syscall(_long(SYS_OPEN_TREE), _long(fd), _EMPTY, _long(flags)), "open_tree")


def mount_setattr(fd: int, attr_set: int, userns_fd: int = 0) -> None:
    """mount_setattr(2) on the mount `fd` names: set `attr_set` (with MOUNT_ATTR_IDMAP, the ids of the user
    namespace `userns_fd`), clear nothing, this mount only."""
    attr = ffi.from_buffer(struct.pack("=QQQQ", attr_set, 0, 0, userns_fd))
    _check(_libc.syscall(_long(SYS_MOUNT_SETATTR), _long(fd), _EMPTY, _long(AT_EMPTY_PATH), _long(_address(attr)),
                         _long(32)), "mount_setattr")


_SYS_STATX = {"x86_64": 332, "aarch64": 291}
STATX_MNT_ID = 0x1000
_STATX_SIZE, _STATX_MNT_ID_OFFSET = 256, 144  # struct statx; stx_mnt_id is its u64 at byte 144


def statx_mount_id(fd: int) -> int:
    """The id of the mount `fd` lies on (statx STATX_MNT_ID; the `mnt_id` of /proc/self/fdinfo, one syscall)."""
    number = _arch_number(_SYS_STATX, "statx")
    buffer = ffi.new("char[]", _STATX_SIZE)
    _check(_libc.syscall(_long(number), _long(fd), _EMPTY, _long(AT_EMPTY_PATH), _long(STATX_MNT_ID), buffer),
           "statx")
    mask, = struct.unpack_from("=I", ffi.buffer(buffer), 0)
    if not mask & STATX_MNT_ID:
        raise OSError(95, "statx: this kernel does not report mount ids")
    return int(struct.unpack_from("=Q", ffi.buffer(buffer), _STATX_MNT_ID_OFFSET)[0])


def move_mount(from_fd: int, to_fd: int) -> None:
    """move_mount(2): attach the detached mount `from_fd` on the file or directory `to_fd` names."""
    flags = MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH
    _check(_libc.syscall(_long(SYS_MOVE_MOUNT), _long(from_fd), _EMPTY, _long(to_fd), _EMPTY, _long(flags)),
           "move_mount")


FSOPEN_CLOEXEC = 1
FSMOUNT_CLOEXEC = 1
FSCONFIG_SET_FLAG, FSCONFIG_SET_STRING, FSCONFIG_CMD_CREATE = 0, 1, 6
MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x2, 0x4


def fsopen(fstype: str) -> int:
    """fsopen(2): a file system context of `fstype`, to configure with fsconfig."""
    return _check(_libc.syscall(_long(SYS_FSOPEN), _path(fstype), _long(FSOPEN_CLOEXEC)), f"fsopen {fstype}")


def fsconfig(context_fd: int, key: str, value: str | None) -> None:
    """fsconfig(2): set `key` to `value` (None: a flag) in a file system context."""
    command, text = (FSCONFIG_SET_FLAG, ffi.NULL) if value is None else (FSCONFIG_SET_STRING, _path(value))
    _check(_libc.syscall(_long(SYS_FSCONFIG), _long(context_fd), _long(command), _path(key), text, _long(0)),
           f"fsconfig {key}")


def fsmount(context_fd: int, attr_flags: int) -> int:
    """Create the context's superblock (FSCONFIG_CMD_CREATE) and return a detached mount of it (fsmount(2)):
    attached nowhere until move_mount puts it somewhere."""
    _check(_libc.syscall(_long(SYS_FSCONFIG), _long(context_fd), _long(FSCONFIG_CMD_CREATE), ffi.NULL, ffi.NULL,
                         _long(0)), "fsconfig create")
    return _check(_libc.syscall(_long(SYS_FSMOUNT), _long(context_fd), _long(FSMOUNT_CLOEXEC), _long(attr_flags)),
                  "fsmount")


def landlock_create_ruleset(attr: bytes | None, flags: int) -> int:
    """landlock_create_ruleset(2); attr is the packed struct landlock_ruleset_attr (or None)."""
    if attr is None:
        return _check(raw_syscall(SYS_LANDLOCK_CREATE_RULESET, 0, 0, flags), "landlock_create_ruleset")
    buf = ffi.from_buffer(attr)
    addr = int(ffi.cast("long", buf))
    return _check(raw_syscall(SYS_LANDLOCK_CREATE_RULESET, addr, len(attr), flags), "landlock_create_ruleset")


def landlock_add_rule(ruleset_fd: int, rule_type: int, attr: bytes) -> None:
    """landlock_add_rule(2) with a packed rule attribute."""
    buf = ffi.from_buffer(attr)
    addr = int(ffi.cast("long", buf))
    _check(raw_syscall(SYS_LANDLOCK_ADD_RULE, ruleset_fd, rule_type, addr, 0), "landlock_add_rule")


def landlock_restrict_self(ruleset_fd: int) -> None:
    """landlock_restrict_self(2): enforce the ruleset on the calling thread and its future children."""
    _check(raw_syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0), "landlock_restrict_self")


def lckpwdf() -> None:
    """Take the shadow-suite lock on the account databases (/etc/.pwd.lock), as useradd does."""
    _check(_libc.lckpwdf(), "lckpwdf")


def ulckpwdf() -> None:
    """Release the lock lckpwdf took."""
    _check(_libc.ulckpwdf(), "ulckpwdf")
