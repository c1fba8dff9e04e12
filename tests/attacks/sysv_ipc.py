"""SysV IPC and POSIX message queues through ctypes (the standard library has neither).

Used by the tests (as root, in the host's IPC namespace) and by the confined apps (standard library and
ctypes only). Every call raises OSError with the kernel's errno on failure.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

LIBC = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, IPC_EXCL, IPC_RMID, IPC_STAT = 0o1000, 0o2000, 0, 2
_STAT_BUFFER = 256  # larger than struct shmid_ds, msqid_ds and semid_ds on every 64-bit ABI

LIBC.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
LIBC.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
LIBC.shmat.restype = ctypes.c_void_p
LIBC.shmdt.argtypes = [ctypes.c_void_p]
LIBC.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
LIBC.msgget.argtypes = [ctypes.c_int, ctypes.c_int]
LIBC.msgctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
LIBC.semget.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
LIBC.semctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
LIBC.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
LIBC.mq_unlink.argtypes = [ctypes.c_char_p]
LIBC.mq_close.argtypes = [ctypes.c_int]


def _check(result: int | None, what: str) -> int:
    if result is None or result == -1 or result == ctypes.c_void_p(-1).value:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return int(result)


def shm_get(key: int, size: int = 0, flags: int = 0) -> int:
    """shmget: a segment's id by key (flags 0: look it up; IPC_CREAT | mode: make it)."""
    return _check(LIBC.shmget(key, size, flags), "shmget")


def shm_attach(shmid: int) -> int:
    """shmat: map the segment anywhere; its address."""
    return _check(LIBC.shmat(shmid, None, 0), "shmat")


def shm_fill(shmid: int, size: int) -> None:
    """Attach, write every byte (so every page is resident), detach."""
    address = shm_attach(shmid)
    ctypes.memset(address, 0x5A, size)
    _check(LIBC.shmdt(ctypes.c_void_p(address)), "shmdt")


def shm_stat(shmid: int) -> None:
    """shmctl(IPC_STAT): reach the segment by id alone."""
    _check(LIBC.shmctl(shmid, IPC_STAT, ctypes.create_string_buffer(_STAT_BUFFER)), "shmctl")


def shm_remove(shmid: int) -> None:
    _check(LIBC.shmctl(shmid, IPC_RMID, None), "shmctl(IPC_RMID)")


def msg_get(key: int, flags: int = 0) -> int:
    """msgget: a message queue's id by key."""
    return _check(LIBC.msgget(key, flags), "msgget")


def msg_stat(msqid: int) -> None:
    _check(LIBC.msgctl(msqid, IPC_STAT, ctypes.create_string_buffer(_STAT_BUFFER)), "msgctl")


def msg_remove(msqid: int) -> None:
    _check(LIBC.msgctl(msqid, IPC_RMID, None), "msgctl(IPC_RMID)")


def sem_get(key: int, count: int = 0, flags: int = 0) -> int:
    """semget: a semaphore set's id by key."""
    return _check(LIBC.semget(key, count, flags), "semget")


def sem_stat(semid: int) -> None:
    _check(LIBC.semctl(semid, 0, IPC_STAT, ctypes.create_string_buffer(_STAT_BUFFER)), "semctl")


def sem_remove(semid: int) -> None:
    _check(LIBC.semctl(semid, 0, IPC_RMID, None), "semctl(IPC_RMID)")


def mq_open(name: str, flags: int = os.O_RDWR, mode: int = 0o600) -> int:
    """mq_open (`/name`): a POSIX message queue descriptor; close it with mq_close."""
    return _check(LIBC.mq_open(name.encode(), flags, mode, None), "mq_open")


def mq_close(mqd: int) -> None:
    _check(LIBC.mq_close(mqd), "mq_close")


def mq_unlink(name: str) -> None:
    _check(LIBC.mq_unlink(name.encode()), "mq_unlink")


def listed(kind: str) -> list[dict[str, str]]:
    """/proc/sysvipc/<kind> (shm, msg, sem) of the caller's IPC namespace, one dict per line."""
    with open(f"/proc/sysvipc/{kind}") as f:
        header, *rows = f.read().splitlines()
    names = header.split()
    return [dict(zip(names, row.split(), strict=False)) for row in rows]


# (ctl call, *_INFO: the highest index in use, *_STAT_ANY: an index's object without read permission)
_ENUMERATE = {"shm": ("shmctl", 14, 15), "msg": ("msgctl", 12, 13), "sem": ("semctl", 19, 20)}


def _ctl(kind: str, index: int, command: int, buffer: ctypes.Array[ctypes.c_char]) -> int:
    if kind == "sem":
        return int(LIBC.semctl(index, 0, command, buffer))
    return int(getattr(LIBC, _ENUMERATE[kind][0])(index, command, buffer))


def listed_by_index(kind: str) -> list[int]:
    """The keys of the caller's IPC namespace's objects of `kind`, by index as ipcs does without
    /proc/sysvipc (*_INFO, then *_STAT_ANY: each struct begins with its ipc_perm, whose first field is the
    key)."""
    _, info, stat_any = _ENUMERATE[kind]
    buffer = ctypes.create_string_buffer(_STAT_BUFFER)
    highest = _check(_ctl(kind, 0, info, buffer), f"{kind} info")
    keys = []
    for index in range(highest + 1):
        if _ctl(kind, index, stat_any, buffer) >= 0:  # a free index: EINVAL
            keys.append(int.from_bytes(buffer.raw[:4], "little", signed=True))
    return keys


@dataclass(frozen=True)
class Objects:
    """One SysV segment, queue and semaphore set under one key, and a POSIX queue."""

    key: int
    shmid: int
    msqid: int
    semid: int
    queue: str


def scratch_key() -> int:
    """A random key with "SH" in its top bytes, so that a leftover is recognisable."""
    return 0x5348_0000 | secrets.randbits(16)


@contextlib.contextmanager
def world_open_objects() -> Iterator[Objects]:
    """Objects in the caller's namespace, mode 0666 (as many programs make them): no permission keeps anyone
    out, only a namespace does. Removed afterwards."""
    key, queue = scratch_key(), f"/sh-test-{secrets.token_hex(4)}"
    shmid = shm_get(key, 4096, IPC_CREAT | 0o666)
    msqid = msg_get(key, IPC_CREAT | 0o666)
    semid = sem_get(key, 1, IPC_CREAT | 0o666)
    old_umask = os.umask(0)
    try:
        mq_close(mq_open(queue, os.O_CREAT | os.O_RDWR, 0o666))
    finally:
        os.umask(old_umask)
    try:
        yield Objects(key, shmid, msqid, semid, queue)
    finally:
        shm_remove(shmid)
        msg_remove(msqid)
        sem_remove(semid)
        mq_unlink(queue)


def errno_of(call: object) -> str:
    """The errno name a call fails with, or "reached"."""
    try:
        call()  # type: ignore[operator]
    except OSError as exc:
        return errno_name(exc.errno or 0)
    return "reached"


def errno_name(number: int) -> str:
    return errno.errorcode.get(number, str(number))


def reach(objects: Objects) -> dict[str, str]:
    """Every way to `objects`: by key or name, and by id (attach, stat)."""
    return {
        "shm_key": errno_of(lambda: shm_get(objects.key)),
        "shm_attach_id": errno_of(lambda: shm_attach(objects.shmid)),
        "shm_stat_id": errno_of(lambda: shm_stat(objects.shmid)),
        "msg_key": errno_of(lambda: msg_get(objects.key)),
        "msg_stat_id": errno_of(lambda: msg_stat(objects.msqid)),
        "sem_key": errno_of(lambda: sem_get(objects.key)),
        "sem_stat_id": errno_of(lambda: sem_stat(objects.semid)),
        "mq_name": errno_of(lambda: mq_close(mq_open(objects.queue))),
    }


def remove_by_key(key: int, queue: str) -> None:
    """Remove the segment, queue and semaphore set with `key` and the POSIX queue `queue`, where they exist
    (the tests' cleanup when a namespace failed and the objects sit in the host's)."""
    for get, remove in ((shm_get, shm_remove), (msg_get, msg_remove), (sem_get, sem_remove)):
        with contextlib.suppress(OSError):
            remove(get(key))
    with contextlib.suppress(OSError):
        mq_unlink(queue)
