"""libseccomp.so.2 through cffi ABI mode: build a filter, add rules, load it."""

from __future__ import annotations

import functools
import os
from typing import Any

from launcher.kernel._sys._ffi import ffi

ACT_KILL_PROCESS = 0x80000000
ACT_ALLOW = 0x7FFF0000
FLTATR_ACT_BADARCH = 2
NR_SCMP_ERROR = -1

CMP_NE = 1
CMP_EQ = 4
CMP_GE = 5
CMP_GT = 6
CMP_MASKED_EQ = 7


def act_errno(errno: int) -> int:
    """SCMP_ACT_ERRNO(errno)."""
    return 0x00050000 | (errno & 0xFFFF)


@functools.cache
def lib() -> Any:
    """The loaded libseccomp; OSError naming the package when it is missing."""
    try:
        return ffi.dlopen("libseccomp.so.2")
    except OSError as exc:
        raise OSError(f"libseccomp.so.2 not found ({exc}): install the libseccomp2 package") from exc


def _check(result: int, what: str) -> None:
    if result < 0:
        raise OSError(-result, f"{what}: {os.strerror(-result)}")


class Filter:
    """One libseccomp filter context; release() frees it."""

    def __init__(self, default_action: int) -> None:
        self._ctx = lib().seccomp_init(default_action)
        if self._ctx == ffi.NULL:
            raise OSError("seccomp_init failed")

    def set_badarch(self, action: int) -> None:
        _check(lib().seccomp_attr_set(self._ctx, FLTATR_ACT_BADARCH, action), "seccomp_attr_set")

    def add(self, action: int, syscall_name: str, cmps: tuple[tuple[int, int, int, int], ...] = ()) -> bool:
        """Add one rule; False when this architecture has no such syscall."""
        nr = lib().seccomp_syscall_resolve_name(syscall_name.encode())
        if nr == NR_SCMP_ERROR:
            return False
        arr = ffi.new("struct scmp_arg_cmp[]", max(len(cmps), 1))
        for i, (arg, op, a, b) in enumerate(cmps):
            arr[i].arg, arr[i].op, arr[i].datum_a, arr[i].datum_b = arg, op, a, b
        result = lib().seccomp_rule_add_array(self._ctx, action, nr, len(cmps), arr)
        _check(result, f"seccomp rule {syscall_name}")
        return True

    def load(self) -> None:
        _check(lib().seccomp_load(self._ctx), "seccomp_load")

    def release(self) -> None:
        if self._ctx is not None and self._ctx != ffi.NULL:
            lib().seccomp_release(self._ctx)
            self._ctx = None
