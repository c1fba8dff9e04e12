"""What the app reaches of the host that no rule of the design holds. Each test states the property the
design should have; they fail today and are marked NOT HELD (xfail, strict: fixing one makes it pass, and
strict then asks for the mark to go). The fixes are in launcher/ (docs/decisions/attacks.md)."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: Landlock ABI 7 does not govern connect() to pathname unix sockets and the app shares the host's "
    "mount namespace: it connects to any world-writable host socket (here a 0666 socket under no Landlock rule; "
    "on a real host the D-Bus system bus, systemd-resolved's varlink socket (DNS past the net door), journald, "
    "/tmp/.X11-unix). Fix in launcher/confine.py: a private mount namespace for the app with tmpfs over /run, "
    "/tmp, /var/tmp, /dev/shm and its own paths bound back"))
def test_a_world_writable_host_socket_is_out_of_reach(attacks: AttackRun) -> None:
    assert attacks.a.probes["host.pathname_socket"]["errno"] is not None


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: /proc is in the app's Landlock read paths and mounted without hidepid: the app reads every "
    "process's command line (here nobody's, holding a secret). Fix in launcher/confine.py: in the app's own "
    "mount namespace, mount a fresh proc with hidepid=invisible (other uids' processes disappear)"))
def test_other_users_command_lines_are_hidden(attacks: AttackRun) -> None:
    assert attacks.cmdline_secret not in attacks.a.probes["host.other_users_cmdline"]["found"]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: seccomp refuses only AF_PACKET and (without a net edge) AF_INET/AF_INET6: AF_VSOCK opens (the "
    "virtio vsock transport is loaded here, so in this VM the hypervisor's CID 2 is one connect() away, past "
    "the network namespace), and every other family is left to the kernel's config. Fix in launcher/seccomp.py: "
    "an allow list of families (AF_UNIX, AF_NETLINK, and AF_INET/AF_INET6 when allowed), EPERM for the rest"))
def test_socket_families_beyond_unix_netlink_and_inet_are_refused_by_seccomp(attacks: AttackRun) -> None:
    results = attacks.a.probes["host.socket_families"]["results"]
    assert results.pop("netlink_route") is None  # the app's own netns: allowed, and harmless
    assert results == dict.fromkeys(results, "EPERM"), results


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: the app's stdin is the person's terminal itself, so it may change its modes (echo off, raw) and "
    "write escape sequences to it; Landlock's IOCTL_DEV does not cover fds opened before the restriction. "
    "TIOCSTI and taking the terminal are held (test_terminal). Fix in launcher/session.py: relay the app's "
    "stdio through a pty the launcher owns (as sudo's use_pty and ssh do), or give it pipes"))
def test_the_app_cannot_change_the_persons_terminal_modes(attacks: AttackRun) -> None:
    assert attacks.a.probes["tty.set_modes"]["errno"] is not None
