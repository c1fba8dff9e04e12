"""What the app reaches of the host beyond the rules of the design. The first run's findings are held now:
a private root and proc per component (launcher/kernel/mountns.py), an allow list of socket families (seccomp),
a pty the launcher relays (launcher/lifecycle/ptyrelay.py). Each test names the barrier and shows, as the app's uid
in the host's mounts (as_app_outside.py) or by what opened before the fix, that nothing else holds the
same thing. What is still NOT HELD is an xfail (strict: fixing it makes it pass, and strict then asks for
the mark to go); the fixes are in docs/decisions/attacks.md."""

from __future__ import annotations

import termios

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


@pytest.mark.parametrize("probe", ["host.pathname_socket", "host.var_lib_socket"])
def test_a_world_writable_host_socket_is_not_in_the_apps_root(attacks: AttackRun, probe: str) -> None:
    """0666 sockets under /tmp (as /tmp/.X11-unix/X0; D-Bus, resolved and journald live under /run) and
    under /var/lib (as MariaDB's /var/lib/mysql/mysql.sock on RHEL): ENOENT, the private root. Landlock ABI 7
    does not govern connect() to a pathname socket, so the root is all that holds it: as the app's uid, in
    its Landlock rules too, it connects in the host's mounts."""
    assert attacks.a.probes[probe]["errno"] == "ENOENT"
    assert attacks.outside_as_app[probe]["result"] == "connected"
    assert attacks.outside_landlocked[probe]["result"] == "connected"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NOT HELD: a path the app may read is bound into its root whole, and Landlock ABI 7 does not govern "
    "connect() to a pathname socket: a world-writable socket that appears inside a read path after the session "
    "started connects (here a 0666 socket made in the manifest's files.read dir while the app runs; one present "
    "at start refuses the session, launcher/lifecycle/preflight.py). Fix: on Landlock ABI 9 (Linux 7.1+) handle "
    "LANDLOCK_ACCESS_FS_RESOLVE_UNIX and grant it only on the edge sockets (EACCES, as this test asserts)"))
def test_a_socket_inside_a_read_path_is_refused(attacks: AttackRun) -> None:
    assert attacks.a.probes["host.socket_in_read_path"]["errno"] == "EACCES"


def test_other_users_processes_are_invisible(attacks: AttackRun) -> None:
    """nobody's process holds a secret on its command line: in the app's proc (its own pid namespace's,
    hidepid=invisible) its /proc/<pid> is ENOENT and every visible process is the app's own uid; the app's
    uid reads the secret in the host's /proc, so the pid namespace and hidepid are what hold it."""
    uid = attacks.a.probes["inherited"]["uid"]
    seen = attacks.a.probes["host.other_users_cmdline"]
    assert seen["found"] == [] and seen["visible_uids"] == [uid], seen
    assert attacks.a.probes["host.secret_process_cmdline"]["errno"] == "ENOENT"
    assert attacks.cmdline_secret in attacks.outside_as_app["host.other_users_cmdline"]["result"]


def test_socket_families_beyond_unix_netlink_and_inet_are_refused_by_seccomp(attacks: AttackRun) -> None:
    """Every rare family gives EPERM in the app: seccomp's allow list (AF_UNIX, AF_NETLINK, AF_INET/6). The
    kernel alone, for the same uid, opens some (AF_VSOCK on this machine) or answers EAFNOSUPPORT: where it
    does not say EPERM itself, EPERM is seccomp's, and there is such a family."""
    results = dict(attacks.a.probes["host.socket_families"]["results"])
    assert results.pop("netlink_route") is None  # the app's own netns: allowed, and harmless
    assert results == dict.fromkeys(results, "EPERM"), results
    kernel_alone = attacks.outside_as_app["host.socket_families"]["results"]
    assert {name for name in results if kernel_alone[name] != "EPERM"}, kernel_alone


def test_the_app_cannot_change_the_persons_terminal_modes(attacks: AttackRun) -> None:
    """The app sets ^A as its terminal's erase character (tcsetattr succeeds, on the relay's pty): the person's
    terminal keeps its own meanwhile, and after the launcher it has exactly the modes it had before (the relay
    put it in raw mode while relaying and restored it). Held by the launcher's pty relay."""
    marks = attacks.a.probes["tty.modes_set"]
    assert attacks.a.probes["tty.set_modes"]["errno"] is None
    erase = termios.VERASE
    assert attacks.terminal.modes_during[6][erase] == attacks.a.modes_before[6][erase] != marks["erase"].encode()
    assert attacks.terminal.modes_after == attacks.a.modes_before


def test_escape_sequences_do_not_reach_the_persons_terminal(attacks: AttackRun) -> None:
    escapes = attacks.a.probes["tty.modes_set"]["escapes"].encode()
    assert attacks.a.probes["tty.escape_sequences"]["errno"] is None  # written to its own terminal
    assert attacks.a.probes["tty.modes_set"]["end"].encode() in attacks.terminal.screen
    assert b"\x1b]" not in attacks.terminal.screen and escapes not in attacks.terminal.screen, attacks.terminal.screen
