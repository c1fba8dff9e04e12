"""Run as the app of two sessions in a row: the first plants, the second looks for what the first left.

`plant KEY`: a SysV shared memory segment under KEY, mode 0600 (only its owner's uid may attach), holding a
message; it outlives the session as long as nothing removes it. `look KEY`: attach that segment and read it,
which succeeds only for the uid that made it. Each reports its uid and groups, waits for one line on stdin,
and exits 0. Standard library and ctypes: it runs inside the confinement.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import sys

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.shmat.restype = ctypes.c_void_p
LIBC.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
IPC_CREAT, IPC_EXCL, SHM_RDONLY = 0o1000, 0o2000, 0o10000
MESSAGE = b"left behind by the first session's app"
FAILED = ctypes.c_void_p(-1).value


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, "sid": os.environ["SHARNESS_SESSION"], "uid": os.getuid(),
                      "gid": os.getgid(), "groups": os.getgroups(), **observed}), flush=True)


def failure() -> str:
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def plant(key: int) -> None:
    shmid = LIBC.shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0o600)
    if shmid < 0:
        report("planted", errno=failure())
        return
    address = LIBC.shmat(shmid, None, 0)
    ctypes.memmove(address, MESSAGE, len(MESSAGE))
    LIBC.shmdt(ctypes.c_void_p(address))
    report("planted", errno=None, shmid=shmid)


def look(key: int) -> None:
    shmid = LIBC.shmget(key, 0, 0)
    if shmid < 0:
        report("looked", errno=failure(), step="shmget")
        return
    address = LIBC.shmat(shmid, None, SHM_RDONLY)
    if address == FAILED:
        report("looked", errno=failure(), step="shmat")
        return
    found = ctypes.string_at(address, len(MESSAGE))
    LIBC.shmdt(ctypes.c_void_p(address))
    report("looked", errno=None, found=found.decode(errors="replace"))


def main() -> None:
    (plant if sys.argv[1] == "plant" else look)(int(sys.argv[2]))
    sys.stdin.readline()


if __name__ == "__main__":
    main()
