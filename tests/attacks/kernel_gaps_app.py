"""The kernel-gaps app: runs confined as the app of a real session (with the net edge, so it may open TCP
sockets) and goes where the kernel's own checks leave gaps: the host's SysV IPC and POSIX queues, listen()'s
implicit bind, TCP Fast Open, rare socketpair families, memfd_secret; then it leaves IPC objects behind.

It judges nothing: each attempt prints `{"probe": name, "errno": NAME or null, ...}`. Protocol: it prints
`ready` (its session), reads one JSON line of targets (the host's objects, a TCP port the test listens on
inside this netns), attacks, makes its own 32 MiB segment, queue, semaphore set and POSIX queue without
removing them, prints `ipc.made`, waits for `end` and exits 0. Standard library and ctypes only.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
from collections.abc import Callable

import sysv_ipc

LIBC_SYSCALL = sysv_ipc.LIBC.syscall
LIBC_SYSCALL.restype = ctypes.c_long
NR_MEMFD_SECRET = 447  # the same number on every architecture that has it
PROXY = ("127.0.0.1", 3128)
TCP_FASTOPEN_CONNECT = 30
OWN_SEGMENT = 32 << 20


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def attempt(probe: str, action: Callable[[], object]) -> None:
    """Run one attempt; report the errno it failed with, or null and what it returned."""
    try:
        result = action()
    except OSError as exc:
        report(probe, errno=sysv_ipc.errno_name(exc.errno or 0))
        return
    report(probe, errno=None, result=repr(result))


def ipc_attacks(targets: dict[str, object]) -> None:
    host = sysv_ipc.Objects(**targets["host_ipc"])  # type: ignore[arg-type]
    for way, seen in sysv_ipc.reach(host).items():
        report(f"ipc.host_{way}", errno=None if seen == "reached" else seen)
    listed = {kind: sysv_ipc.listed_by_index(kind) for kind in ("shm", "msg", "sem")}
    report("ipc.listed", listed=listed, ns=os.readlink("/proc/self/ns/ipc"))
    attempt("ipc.proc_sysvipc", lambda: sysv_ipc.listed("shm"))  # its proc has subset=pid: no sysvipc/


def _with_socket(family: int, action: Callable[[socket.socket], object]) -> Callable[[], object]:
    def run() -> object:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            return action(sock)
    return run


def _abstract_listen(sock: socket.socket) -> None:
    sock.bind(f"\0sh-attack-gaps-{os.getpid()}")
    sock.listen(1)


def listen_attacks() -> None:
    attempt("net.listen_unbound_tcp", _with_socket(socket.AF_INET, lambda s: s.listen(1)))
    attempt("net.listen_unbound_tcp6", _with_socket(socket.AF_INET6, lambda s: s.listen(1)))
    attempt("net.listen_unix", _with_socket(socket.AF_UNIX, _abstract_listen))
    attempt("control.bind_port0", _with_socket(socket.AF_INET, lambda s: s.bind(("127.0.0.1", 0))))


def fast_open_attacks(port: int) -> None:
    target = ("127.0.0.1", port)
    attempt("control.connect_test_port", _with_socket(socket.AF_INET, lambda s: s.connect(target)))
    attempt("control.connect_proxy", _with_socket(socket.AF_INET, lambda s: s.connect(PROXY)))
    attempt("net.fastopen_sendto",
            _with_socket(socket.AF_INET, lambda s: s.sendto(b"x", socket.MSG_FASTOPEN, target)))
    attempt("net.fastopen_sendmsg",
            _with_socket(socket.AF_INET, lambda s: s.sendmsg([b"x"], [], socket.MSG_FASTOPEN, target)))
    attempt("net.fastopen_connect_option",
            _with_socket(socket.AF_INET, lambda s: s.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1)))
    attempt("net.fastopen_sysctl", lambda: open("/proc/sys/net/ipv4/tcp_fastopen").close())


def _pair(family: int, kind: int) -> Callable[[], object]:
    def run() -> object:
        first, second = socket.socketpair(family, kind)
        first.close()
        second.close()
        return 0
    return run


def _memfd_secret() -> int:
    fd = LIBC_SYSCALL(NR_MEMFD_SECRET, 0)
    if fd < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    os.close(fd)
    return fd


def family_attacks() -> None:
    for name, family in (("vsock", 40), ("can", 29), ("tipc", 30), ("bluetooth", 31), ("alg", 38)):
        attempt(f"seccomp.socketpair_{name}", _pair(family, socket.SOCK_STREAM))
    attempt("seccomp.socketpair_inet_dgram", _pair(socket.AF_INET, socket.SOCK_DGRAM))
    attempt("control.socketpair_unix", _pair(socket.AF_UNIX, socket.SOCK_STREAM))
    attempt("seccomp.memfd_secret", _memfd_secret)


def leave_ipc_behind(key: int, queue: str) -> None:
    """A 32 MiB segment written through (resident), a queue, a semaphore set, a POSIX queue: none removed."""
    shmid = sysv_ipc.shm_get(key, OWN_SEGMENT, sysv_ipc.IPC_CREAT | 0o600)
    sysv_ipc.shm_fill(shmid, OWN_SEGMENT)
    msqid = sysv_ipc.msg_get(key, sysv_ipc.IPC_CREAT | 0o600)
    semid = sysv_ipc.sem_get(key, 1, sysv_ipc.IPC_CREAT | 0o600)
    attempt("ipc.own_mq_create", lambda: sysv_ipc.mq_close(sysv_ipc.mq_open(queue, os.O_CREAT | os.O_RDWR)))
    report("ipc.made", shmid=shmid, msqid=msqid, semid=semid, listed=sysv_ipc.listed_by_index("shm"))


def main() -> int:
    report("ready", sid=os.environ["SHARNESS_SESSION"], tty=os.isatty(0))
    targets = json.loads(sys.stdin.readline())
    ipc_attacks(targets)
    listen_attacks()
    fast_open_attacks(int(targets["tcp_port"]))
    family_attacks()
    leave_ipc_behind(int(targets["own_key"]), str(targets["own_queue"]))
    line = sys.stdin.readline().strip()
    report("end", line=line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
