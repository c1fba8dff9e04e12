"""The fs bench's direct baselines that cross a process boundary, and CPU per side.

The old direct baselines (bench/fs_bench.py) write and read a file in the bench's own process: the read is one
copy out of the page cache, a floor no door can approach. `socket_write` and `socket_read` move the same bytes
between the page cache and another process over a Unix socket, with no TLS and no HTTP: the kernel's floor for
any door (docs/decisions/bench.md, "fs door"). `tls_write` and `tls_read` move them the same way inside a mutual
TLS 1.3 connection (pyOpenSSL on both sides, as the doors' transport), still with no HTTP: the floor of any door
that must speak TLS over a Unix socket, where kernel TLS does not apply (it is a TCP upper layer only).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from OpenSSL import SSL

from bench._certs import CertFiles
from bench._tls import TlsOptions, pyopenssl_context

PIECE = 256 * 1024
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (/proc/<pid>/stat, clock ticks)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


@dataclass(frozen=True)
class Timed:
    """One measured operation: wall seconds, this process's CPU seconds and the other side's."""

    wall_s: float
    cpu_s: float
    other_cpu_s: float


class Clock:
    """Wall time, this process's CPU (time.process_time) and another process's CPU (/proc) around a block."""

    def __init__(self, other_pid: int | None = None) -> None:
        self._other = other_pid

    def __enter__(self) -> Clock:
        self._start = (time.perf_counter(), time.process_time(), self._other_cpu())
        return self

    def __exit__(self, *exc_info: object) -> None:
        wall, cpu, other = self._start
        self.timed = Timed(time.perf_counter() - wall, time.process_time() - cpu, self._other_cpu() - other)

    def _other_cpu(self) -> float:
        return process_cpu_s(self._other) if self._other is not None else 0.0


def _child_cpu_s(pid: int) -> float:
    _, status, usage = os.wait4(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise RuntimeError("the bench's direct socket child failed")
    return usage.ru_utime + usage.ru_stime


def socket_write(path: str, payload: bytes) -> Timed:
    """Send `payload` over a Unix socket to a child that writes it to `path` and fsyncs it (a door's floor)."""

    def receive(sock: socket.socket) -> None:
        _receive_to_file(sock, path, len(payload))
        sock.sendall(b"k")

    start, cpu = time.perf_counter(), time.process_time()
    parent, pid = _fork_peer(receive)
    with parent:
        parent.sendall(payload)
        if parent.recv(1) != b"k":
            raise RuntimeError("the bench's direct socket child did not finish the write")
        wall, mine = time.perf_counter() - start, time.process_time() - cpu
    return Timed(wall, mine, _child_cpu_s(pid))


def _receive_to_file(sock: socket.socket, path: str, size: int) -> None:
    buffer = bytearray(PIECE)
    view = memoryview(buffer)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        received = 0
        while received < size:
            count = sock.recv_into(buffer, min(PIECE, size - received))
            if not count:
                raise RuntimeError("the bench's socket closed early")
            os.write(fd, view[:count])
            received += count
        os.fsync(fd)
    finally:
        os.close(fd)


def _receive_whole(recv_into: Callable[[memoryview, int], int], size: int, what: str) -> None:
    received = bytearray(size)
    view, got = memoryview(received), 0
    while got < size:
        count = recv_into(view[got:], size - got)
        if not count:
            raise RuntimeError(f"the bench's {what} child sent a short file")
        got += count


def socket_read(path: str, size: int) -> Timed:
    """A child sends `path` from the page cache (sendfile) over a Unix socket; this process receives it whole."""

    def send(sock: socket.socket) -> None:
        with open(path, "rb") as source:
            offset = 0
            while offset < size:
                offset += os.sendfile(sock.fileno(), source.fileno(), offset, size - offset)

    start, cpu = time.perf_counter(), time.process_time()
    parent, pid = _fork_peer(send)
    with parent:
        _receive_whole(parent.recv_into, size, "direct socket")
        wall, mine = time.perf_counter() - start, time.process_time() - cpu
    return Timed(wall, mine, _child_cpu_s(pid))


def _fork_peer(work: Callable[[socket.socket], None]) -> tuple[socket.socket, int]:
    """A child that runs `work` on its end of a fresh Unix socket pair and exits (0 only if it returned)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # never run the parent's cleanups
        code = 1
        try:
            parent.close()
            work(child)
            code = 0
        finally:
            os._exit(code)
    child.close()
    return parent, pid


def _tls(sock: socket.socket, files: CertFiles, server: bool) -> SSL.Connection:
    conn = SSL.Connection(pyopenssl_context(files, server, TlsOptions()), sock)
    conn.set_accept_state() if server else conn.set_connect_state()
    conn.do_handshake()
    return conn


def tls_write(path: str, payload: bytes, server: CertFiles, client: CertFiles) -> Timed:
    """`socket_write` inside mutual TLS: the child (server side) decrypts, writes `path` and fsyncs it."""

    def receive(sock: socket.socket) -> None:
        conn = _tls(sock, server, True)
        buffer = bytearray(PIECE)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            received = 0
            while received < len(payload):
                count = conn.recv_into(buffer, min(PIECE, len(payload) - received))
                os.write(fd, memoryview(buffer)[:count])
                received += count
            os.fsync(fd)
        finally:
            os.close(fd)
        conn.sendall(b"k")

    parent, pid = _fork_peer(receive)
    with parent:
        conn = _tls(parent, client, False)  # the handshake is outside the timed span, as the door's kept connection
        start, cpu = time.perf_counter(), time.process_time()
        conn.sendall(payload)
        if conn.recv(1) != b"k":
            raise RuntimeError("the bench's TLS child did not finish the write")
        wall, mine = time.perf_counter() - start, time.process_time() - cpu
    return Timed(wall, mine, _child_cpu_s(pid))


def tls_read(path: str, size: int, server: CertFiles, client: CertFiles) -> Timed:
    """`socket_read` inside mutual TLS: the child reads `path` in pieces and encrypts it; this process decrypts."""

    def send(sock: socket.socket) -> None:
        conn = _tls(sock, server, True)
        if conn.recv(1) != b"g":
            raise RuntimeError("the bench's TLS parent did not ask for the file")
        buffer = bytearray(PIECE)
        with open(path, "rb", buffering=0) as source:
            while count := source.readinto(buffer):
                conn.sendall(memoryview(buffer)[:count])

    parent, pid = _fork_peer(send)
    with parent:
        conn = _tls(parent, client, False)
        start, cpu = time.perf_counter(), time.process_time()
        conn.sendall(b"g")
        _receive_whole(conn.recv_into, size, "TLS")
        wall, mine = time.perf_counter() - start, time.process_time() - cpu
    return Timed(wall, mine, _child_cpu_s(pid))
