"""Network namespaces: bind-mounted under /run/netns, lo up by ioctl, entered per thread, removed idempotently."""

from __future__ import annotations

import errno
import os
import secrets
import socket

import pytest

from launcher.kernel import netns
from launcher.kernel.netns import NetnsError


def test_only_session_names_are_accepted() -> None:
    for bad in ("default", "../etc", "sh-/x", "SH-a"):
        with pytest.raises(NetnsError, match="refused"):
            netns.delete_netns(bad)


@pytest.mark.root
def test_lifecycle_loopback_and_listener() -> None:
    up, empty = (f"sh-test-{secrets.token_hex(3)}" for _ in range(2))
    own_ns = os.readlink("/proc/thread-self/ns/net")
    try:
        netns.create_netns(up, loopback_up=True)
        netns.create_netns(empty, loopback_up=False)
        with pytest.raises(NetnsError, match="already exists"):
            netns.create_netns(up, loopback_up=True)
        fd = netns.netns_fd(up)
        try:
            assert os.fstat(fd).st_ino != os.stat("/proc/self/ns/net").st_ino
            assert fd >= netns.FD_FLOOR and not os.get_inheritable(fd)
        finally:
            os.close(fd)
        listener = netns.tcp_listener_in_netns(up, "127.0.0.1", 0)
        with listener:
            assert listener.getsockname()[0] == "127.0.0.1"
            assert os.readlink("/proc/thread-self/ns/net") == own_ns  # this thread came back
            with netns.entered(up), socket.create_connection(listener.getsockname(), timeout=5):
                pass
        with pytest.raises(OSError), netns.entered(empty):  # lo is down: 127.0.0.1 has no route
            socket.create_connection(("127.0.0.1", 9), timeout=5)
        assert os.readlink("/proc/thread-self/ns/net") == own_ns
    finally:
        netns.delete_netns(up)
        netns.delete_netns(empty)
    assert not os.path.exists(f"/run/netns/{up}") and not os.path.exists(f"/run/netns/{empty}")
    netns.delete_netns(up)  # idempotent


def _fast_open_sysctl() -> str:
    with open(netns.TCP_FASTOPEN_SYSCTL) as f:
        return f.read().strip()


@pytest.mark.root
def test_fast_open_is_off_in_the_namespaces_the_launcher_makes() -> None:
    """tcp_fastopen=0 inside, the host's left as it was; a Fast Open connect there gets the kernel's
    EOPNOTSUPP (to a listener plain connect reaches), the layer behind seccomp's refusal of the flag."""
    name = f"sh-test-{secrets.token_hex(3)}"
    host_value = _fast_open_sysctl()
    try:
        netns.create_netns(name, loopback_up=True)
        with netns.entered(name):
            assert _fast_open_sysctl() == "0"
        assert _fast_open_sysctl() == host_value
        listener = netns.tcp_listener_in_netns(name, "127.0.0.1", 0)
        with listener, netns.entered(name):
            with socket.create_connection(listener.getsockname(), timeout=5):
                pass
            with socket.socket() as sock, pytest.raises(OSError) as refused:
                sock.sendto(b"x", socket.MSG_FASTOPEN, listener.getsockname())
            assert refused.value.errno == errno.EOPNOTSUPP
    finally:
        netns.delete_netns(name)


def _mountinfo_line(path: str) -> str:
    with open("/proc/self/mountinfo") as mountinfo:
        lines = [line for line in mountinfo if line.split()[4] == path]
    assert lines, f"{path} is not a mount point"
    return lines[-1]


@pytest.mark.root
def test_each_namespace_is_an_nsfs_mount_on_a_shared_netns_root() -> None:
    """As `ip netns add` leaves them: /run/netns shared (later namespaces show in mount namespaces that copied it),
    each name an nsfs bind mount of its own namespace; a mount point left bare by a failed create is removed."""
    name, bare = (f"sh-test-{secrets.token_hex(3)}" for _ in range(2))
    try:
        netns.create_netns(name, loopback_up=False)
        assert "shared:" in _mountinfo_line(netns.NETNS_ROOT)
        assert " - nsfs " in _mountinfo_line(f"{netns.NETNS_ROOT}/{name}")
        os.close(os.open(f"{netns.NETNS_ROOT}/{bare}", os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
        netns.delete_netns(bare)
        assert not os.path.lexists(f"{netns.NETNS_ROOT}/{bare}")
    finally:
        netns.delete_netns(name)
        netns.delete_netns(bare)
    assert not os.path.lexists(f"{netns.NETNS_ROOT}/{name}")
