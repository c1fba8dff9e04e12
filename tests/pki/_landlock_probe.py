"""Child of test_bundle.py: under a Landlock ruleset that handles every filesystem right and allows none,
load an SVID from a memfd through /proc/self/fd/N, as a confined door does. Prints a JSON verdict."""

from __future__ import annotations

import errno
import json
import os
import ssl
import sys

from cffi import FFI

from pki.bundle import load_into_context

_ffi = FFI()
_ffi.cdef("long syscall(long number, ...); int prctl(int, unsigned long, unsigned long, unsigned long, unsigned long);")
_SYS_CREATE_RULESET, _SYS_RESTRICT_SELF = 444, 446  # x86_64 and aarch64 share these numbers
_CREATE_RULESET_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38


def _restrict_all_fs() -> int:
    libc = _ffi.dlopen(None)
    abi = libc.syscall(_SYS_CREATE_RULESET, _ffi.NULL, _ffi.cast("size_t", 0), _ffi.cast("unsigned", 1))
    bits = 16 if abi >= 5 else 15 if abi >= 3 else 14 if abi >= 2 else 13
    attr = _ffi.new("unsigned long long *", (1 << bits) - 1)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, attr, _ffi.cast("size_t", 8), _ffi.cast("unsigned", 0))
    if ruleset < 0 or libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(_ffi.errno, "landlock ruleset or no_new_privs failed")
    if libc.syscall(_SYS_RESTRICT_SELF, _ffi.cast("int", ruleset), _ffi.cast("unsigned", 0)) != 0:
        raise OSError(_ffi.errno, "landlock_restrict_self failed")
    return int(abi)


def main() -> None:
    fd = os.memfd_create("sh-test-svid")
    os.write(fd, sys.stdin.buffer.read())
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    abi = _restrict_all_fs()
    try:
        open("/etc/hostname", "rb").close()
        etc = "readable"
    except OSError as exc:
        etc = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    try:
        load_into_context(ctx, fd)
        svid = "loaded"
    except (OSError, ValueError) as exc:
        svid = f"refused: {exc}"
    print(json.dumps({"abi": abi, "etc": etc, "svid": svid}))


if __name__ == "__main__":
    main()
