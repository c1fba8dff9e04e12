"""Network namespaces for the net door's test network: create, enter, make sockets inside, remove.

Uses the `ip` tool for links and addresses (no hand-written netlink) and setns(2) through cffi.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator

import cffi

CLONE_NEWNET = 0x40000000
_ffi = cffi.FFI()
_ffi.cdef("int setns(int fd, int nstype);")
_libc = _ffi.dlopen(None)


def ip(*args: str) -> None:
    """Run `ip ARGS`, raising with its stderr on failure."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def setns_fd(fd: int) -> None:
    """Move the calling thread into the network namespace `fd` refers to."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = _ffi.errno
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def entered(name: str) -> Iterator[None]:
    """Move the calling thread into netns `name` for the block, then back where it was."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns_fd(target)
        try:
            yield
        finally:
            setns_fd(home)
    finally:
        os.close(target)
        os.close(home)


def socket_in(name: str, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A socket that lives in netns `name` (a socket keeps the namespace it was made in)."""
    with entered(name):
        return socket.socket(family, kind)


def wait_up(name: str, device: str, timeout_s: float = 5.0) -> None:
    """Wait until `device` in netns `name` reports LOWER_UP (veth carrier comes up asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shown = subprocess.run(["ip", "-n", name, "-o", "link", "show", "dev", device],
                               capture_output=True, text=True, check=False).stdout
        if "LOWER_UP" in shown and "state UP" in shown:
            return
        time.sleep(0.02)
    raise RuntimeError(f"{device} in {name} did not come up within {timeout_s} s")


def add(name: str) -> None:
    """Create netns `name` with its loopback up."""
    ip("netns", "add", name)
    ip("-n", name, "link", "set", "lo", "up")
    # No duplicate address detection: a new link's IPv6 addresses are usable at once.
    for scope in ("all", "default"):
        ip("netns", "exec", name, "sysctl", "-qw", f"net.ipv6.conf.{scope}.accept_dad=0")


def remove(name: str) -> None:
    """Delete netns `name` (its veth ends go with it); a missing one is fine."""
    if os.path.exists(f"/run/netns/{name}"):
        ip("netns", "del", name)
