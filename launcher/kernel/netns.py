"""Named network namespaces (`/run/netns/<name>`) made and configured with pyroute2, never raw netlink."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import threading
from collections.abc import Iterator

from pyroute2 import IPRoute
from pyroute2 import netns as pr_netns

from launcher.kernel._sys import libc
from pki.vocabulary import NETNS_ROOT

_NAME = re.compile(r"^sh-[a-z0-9][a-z0-9-]{0,60}$")


class NetnsError(RuntimeError):
    """A namespace could not be made, entered or removed; the message names it."""


def _path(name: str) -> str:
    if not _NAME.match(name):
        raise NetnsError(f"netns name {name!r} refused: session namespaces are sh-[a-z0-9-]")
    return os.path.join(NETNS_ROOT, name)


FD_FLOOR = 100
"""netns_fd() numbers are >= this: clear of the fd contract (3, 4, 5…) that place_fds fills before setns."""


def netns_fd(name: str) -> int:
    """An O_RDONLY, close-on-exec fd on /run/netns/<name>, numbered >= FD_FLOOR, for setns (close it)."""
    try:
        low = os.open(_path(name), os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise NetnsError(f"netns {name} cannot be opened: {exc.strerror}") from exc
    try:
        return fcntl.fcntl(low, fcntl.F_DUPFD_CLOEXEC, FD_FLOOR)
    finally:
        os.close(low)


def setns(fd: int, nstype: int = libc.CLONE_NEWNET) -> None:
    """Move the calling thread into the namespace `fd` names."""
    libc.setns(fd, nstype)


@contextlib.contextmanager
def entered(name: str) -> Iterator[None]:
    """Run the block with this thread inside netns `name`, and always come back to where it was."""
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    target = netns_fd(name)
    try:
        setns(target)
        try:
            yield
        finally:
            setns(original)
    finally:
        os.close(target)
        os.close(original)


def _unshare_and_attach(name: str) -> None:
    """Give this thread a fresh netns, bind-mount it at /run/netns/<name> (pyroute2), and step back out.

    unshare(CLONE_NEWNET) moves only the calling thread, so no process is forked: ~0.7 ms against ~9 ms
    for pyroute2's netns.create, which forks a helper (docs/decisions/kernel.md).
    """
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        libc.unshare(libc.CLONE_NEWNET)
        try:
            pr_netns.attach(name, f"{os.getpid()}/task/{threading.get_native_id()}")
        finally:
            setns(original)
    finally:
        os.close(original)


TCP_FASTOPEN_SYSCTL = "/proc/sys/net/ipv4/tcp_fastopen"  # IPv6 sockets obey it too


def fast_open_off() -> None:
    """net.ipv4.tcp_fastopen=0 in the calling thread's netns (/proc/sys/net is the opener's namespace).

    Fast Open's connect (sendto with MSG_FASTOPEN) passes no Landlock check on ABI <= 7; seccomp refuses the
    flag, and with the sysctl at 0 the kernel itself answers EOPNOTSUPP.
    """
    with open(TCP_FASTOPEN_SYSCTL, "w") as f:
        f.write("0")


def create_netns(name: str, loopback_up: bool) -> None:
    """Make netns `name` with nothing in it but `lo` (brought up only when asked), TCP Fast Open off."""
    path = _path(name)
    if os.path.lexists(path):
        raise NetnsError(f"netns {name} already exists: remove it (sharness-launch gc) first")
    try:
        _unshare_and_attach(name)
    except OSError as exc:
        raise NetnsError(f"netns {name} could not be created: {exc}") from exc
    with entered(name):
        try:
            fast_open_off()
        except OSError as exc:
            raise NetnsError(f"netns {name}: {TCP_FASTOPEN_SYSCTL} could not be set to 0: {exc}") from exc
        if loopback_up:
            # The netlink socket is opened inside the namespace, so it configures that namespace's lo.
            with IPRoute() as ipr:
                (index,) = ipr.link_lookup(ifname="lo")
                ipr.link("set", index=index, state="up")


def delete_netns(name: str) -> None:
    """Unmount and unlink /run/netns/<name>; success when it is already gone."""
    path = _path(name)
    if not os.path.lexists(path):
        return
    try:
        pr_netns.remove(name)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise NetnsError(f"netns {name} could not be removed: {exc}") from exc


def tcp_listener_in_netns(name: str, host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening TCP socket created and bound inside netns `name` (this thread returns to its own)."""
    with entered(name):
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(backlog)
        except OSError:
            sock.close()
            raise
    return sock
