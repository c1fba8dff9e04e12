"""Network namespaces: made with pyroute2, entered per thread, removed idempotently."""

from __future__ import annotations

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
