"""What the app reaches of the host beyond the rules of the design. Three findings of the first run are
held since c6fc80f (a private mount namespace and proc per component, an allow list of socket families);
each test names the barrier and shows, with the app's uid in the host's mounts (as_app_outside.py) or by
what opened before the fix, that nothing else holds the same thing. Two remain NOT HELD (xfail, strict:
fixing one makes it pass, and strict then asks for the mark to go); the fixes are in docs/decisions/attacks.md."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


def test_a_world_writable_host_socket_under_tmp_is_not_in_the_apps_mounts(attacks: AttackRun) -> None:
    """A 0666 socket under /tmp (as /tmp/.X11-unix/X0; D-Bus, resolved and journald live under /run):
    ENOENT, the private mount namespace (tmpfs over /tmp). Landlock ABI 7 does not govern connect() to a
    pathname socket, so the mask is all that holds it: the app's uid connects in the host's mounts."""
    assert attacks.a.probes["host.pathname_socket"]["errno"] == "ENOENT"
    assert attacks.outside_as_app["host.pathname_socket"]["result"] == "connected"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: the mount namespace masks only /run, /tmp, /var/tmp and /dev/shm, and Landlock ABI 7 does not "
    "govern connect() to pathname unix sockets: a world-writable socket anywhere else is one connect() away "
    "(here a 0666 socket under /var/lib, as MariaDB's /var/lib/mysql/mysql.sock on RHEL; sockets in /home, "
    "/var/spool, /srv alike). Fix in launcher/mountns.py: build the component's root from an allow list "
    "(a tmpfs root with only its Landlock paths bound in, then pivot_root), so any other path gives ENOENT; "
    "on Landlock ABI 9 (Linux 7.1+) LANDLOCK_ACCESS_FS_RESOLVE_UNIX granted only on edge sockets gives EACCES"))
def test_a_world_writable_host_socket_outside_the_masked_dirs_is_out_of_reach(attacks: AttackRun) -> None:
    assert attacks.a.probes["host.unmasked_socket"]["errno"] == "ENOENT"


def test_other_users_processes_are_invisible(attacks: AttackRun) -> None:
    """nobody's process holds a secret on its command line: in the app's proc (hidepid=invisible) its
    /proc/<pid> is ENOENT and every visible process is the app's own uid; the app's uid reads the secret in
    the host's /proc, so hidepid is what holds it."""
    uid = attacks.a.probes["inherited"]["uid"]
    seen = attacks.a.probes["host.other_users_cmdline"]
    assert seen["found"] == [] and seen["visible_uids"] == [uid], seen
    assert attacks.a.probes["host.secret_process_cmdline"]["errno"] == "ENOENT"
    assert attacks.cmdline_secret in attacks.outside_as_app["host.other_users_cmdline"]["result"]


def test_socket_families_beyond_unix_netlink_and_inet_are_refused_by_seccomp(attacks: AttackRun) -> None:
    """Every rare family gives EPERM in the app: seccomp's allow list (AF_UNIX, AF_NETLINK, AF_INET/6). The
    kernel alone, for the same uid, opens some (AF_VSOCK, AF_ALG, ... on this machine) or answers
    EAFNOSUPPORT: where it does not say EPERM itself, EPERM is seccomp's, and there is such a family."""
    results = dict(attacks.a.probes["host.socket_families"]["results"])
    assert results.pop("netlink_route") is None  # the app's own netns: allowed, and harmless
    assert results == dict.fromkeys(results, "EPERM"), results
    kernel_alone = attacks.outside_as_app["host.socket_families"]["results"]
    assert {name for name in results if kernel_alone[name] != "EPERM"}, kernel_alone


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: the app's stdin is the person's terminal itself, so it may change its modes (echo off, raw) and "
    "write escape sequences to it; Landlock's IOCTL_DEV does not cover fds opened before the restriction. "
    "TIOCSTI and taking the terminal are held (test_terminal). Fix in launcher/session.py: relay the app's "
    "stdio through a pty the launcher owns (as sudo's use_pty and ssh do), or give it pipes"))
def test_the_app_cannot_change_the_persons_terminal_modes(attacks: AttackRun) -> None:
    assert attacks.a.probes["tty.set_modes"]["errno"] is not None
