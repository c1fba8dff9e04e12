"""Named network namespaces (`/run/netns/<name>`, iproute2's layout): a bind mount each, `lo` brought up by the
netdevice ioctl. No netlink: the one link change a session makes has its own ioctl, and pyroute2's import was
~60 ms of every launcher start (docs/decisions/kernel.md, "Network namespaces")."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import socket
import struct
from collections.abc import Iterator

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


MS_BIND, MS_REC, MS_SHARED = 0x1000, 0x4000, 1 << 20


def _share_netns_root() -> None:
    """/run/netns a shared mount, as `ip netns add` makes it: a namespace mounted there later shows in every
    mount namespace that copied it. Not yet a mount point (EINVAL): bind it onto itself first."""
    os.makedirs(NETNS_ROOT, mode=0o755, exist_ok=True)
    try:
        libc.mount(None, NETNS_ROOT, None, MS_SHARED | MS_REC)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        libc.mount(NETNS_ROOT, NETNS_ROOT, None, MS_BIND | MS_REC)
        libc.mount(None, NETNS_ROOT, None, MS_SHARED | MS_REC)


def _unshare_and_attach(path: str) -> None:
    """Give this thread a fresh netns, bind-mount it on `path` (an empty file made here), and step back out.

    unshare(CLONE_NEWNET) moves only the calling thread, so no process is forked: ~0.7 ms against ~9 ms
    for pyroute2's netns.create, which forks a helper (docs/decisions/kernel.md).
    """
    _share_netns_root()
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0))
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        libc.unshare(libc.CLONE_NEWNET)
        try:
            libc.mount("/proc/thread-self/ns/net", path, None, MS_BIND)
        finally:
            setns(original)
    finally:
        os.close(original)


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = struct.Struct("16sH22x")  # struct ifreq (40 bytes): ifr_name, then ifr_flags at the union's start


def bring_lo_up() -> None:
    """`lo` up in the calling thread's netns (netdevice(7): SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        _, flags = _IFREQ.unpack(fcntl.ioctl(sock, SIOCGIFFLAGS, _IFREQ.pack(b"lo", 0)))
        fcntl.ioctl(sock, SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | IFF_UP))


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
        _unshare_and_attach(path)
    except OSError as exc:
        raise NetnsError(f"netns {name} could not be created: {exc}") from exc
    with entered(name):
        try:
            fast_open_off()
        except OSError as exc:
            raise NetnsError(f"netns {name}: {TCP_FASTOPEN_SYSCTL} could not be set to 0: {exc}") from exc
        if loopback_up:
            try:  # the socket is made inside the namespace, so the ioctl changes that namespace's lo
                bring_lo_up()
            except OSError as exc:
                raise NetnsError(f"netns {name}: lo could not be brought up: {exc}") from exc


def delete_netns(name: str) -> None:
    """Unmount and unlink /run/netns/<name>; success when it is already gone."""
    path = _path(name)
    if not os.path.lexists(path):
        return
    try:
        libc.umount2(path, libc.MNT_DETACH)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOENT):  # EINVAL: a mount point that a failed create left bare
            raise NetnsError(f"netns {name} could not be unmounted: {exc}") from exc
    try:
        os.unlink(path)
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
