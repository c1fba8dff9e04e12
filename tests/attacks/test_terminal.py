"""The person's terminal is the launcher's stdin (as when it runs from a shell). The launcher relays the app's
stdio through a pty of its own (launcher/lifecycle/ptyrelay.py): the app's terminal is that pty, so what it injects
(TIOCSTI), takes (TIOCSCTTY) or sets (modes) lands on its own pty, and it holds no fd and reaches no path of
the person's terminal. dev.tty.legacy_tiocsti is 1 on this machine: the ioctl itself is not disabled."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


def test_the_apps_terminal_is_the_relays_pty_not_the_persons(attacks: AttackRun) -> None:
    """fd 0 is a terminal, another device than the person's (held by the launcher's pty relay)."""
    seen = attacks.a.probes["tty.isatty"]
    assert seen["value"] is True and seen["name"].startswith("/dev/pts/"), seen
    assert (seen["name"], seen["rdev"]) != (attacks.a.tty_name, attacks.a.tty_rdev), seen
    assert attacks.a.probes["inherited"]["fds"]["0"] == seen["name"]


@pytest.mark.parametrize("probe", ["tty.tiocsti", "tty.take_ctty", "tty.steal_ctty"])
def test_input_injection_and_taking_the_terminal_land_on_the_apps_own_pty(attacks: AttackRun, probe: str) -> None:
    """TIOCSTI and TIOCSCTTY succeed: on the relay's pty, already the app's controlling terminal. The person's
    terminal is not that device (above), nor any fd the app holds (test_the_app_inherits_only_…)."""
    assert attacks.a.probes[probe]["errno"] is None, attacks.a.probes[probe]


@pytest.mark.parametrize("probe", ["tty.open_dev_tty", "tty.open_slave_path", "tty.open_person_tty"])
def test_the_app_cannot_open_a_terminal_by_name(attacks: AttackRun, probe: str) -> None:
    """/dev/tty, its own /dev/pts/M and the person's /dev/pts/N: ENOENT, neither /dev/tty nor /dev/pts is in
    the app's private root."""
    assert attacks.a.probes[probe]["errno"] == "ENOENT"


@pytest.mark.parametrize("probe", ["tty.open_dev_tty", "tty.open_person_tty"])
def test_behind_the_root_landlock_refuses_the_terminals(attacks: AttackRun, probe: str) -> None:
    """As the app's uid in its Landlock rules in the host's mounts: EACCES, Landlock (no rule for /dev/tty or
    /dev/pts; the person's pts is root's 0620 here besides)."""
    assert attacks.outside_landlocked[probe]["errno"] == "EACCES"


def test_the_app_inherits_only_its_stdio_and_named_variables(attacks: AttackRun) -> None:
    """No fd past 2 (no launcher socket, key memfd or listener), no variable beyond the launcher's list."""
    inherited = attacks.a.probes["inherited"]
    assert sorted(inherited["fds"]) == ["0", "1", "2"], inherited
    assert inherited["env"] == ["HOME", "LANG", "PATH", "SHARNESS_BUNDLE", "SHARNESS_DOOR_FS", "SHARNESS_SESSION",
                                "SHARNESS_SVID", "SHARNESS_TRUST_DOMAIN", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                                "XDG_DATA_HOME", "XDG_STATE_HOME"]
    assert inherited["uid"] not in (0, 65534)
