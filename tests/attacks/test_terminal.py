"""The person's terminal is the app's stdin (as when the launcher runs from a shell): the app cannot push
input into it (TIOCSTI, the bubblewrap CVE-2017-5226 shape) nor make it its controlling terminal, because
the launcher put the app in a session of its own (setsid); dev.tty.legacy_tiocsti is 1 on this machine,
so the ioctl itself is not disabled. Reopening the terminal by name is refused too."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


def test_stdin_is_the_launchers_controlling_terminal(attacks: AttackRun) -> None:
    assert attacks.a.probes["tty.isatty"]["value"] is True
    assert attacks.a.probes["inherited"]["fds"]["0"].startswith("/dev/pts/")


@pytest.mark.parametrize("probe", ["tty.tiocsti", "tty.take_ctty", "tty.steal_ctty"])
def test_the_app_cannot_inject_input_or_take_the_terminal(attacks: AttackRun, probe: str) -> None:
    """EPERM from the tty layer: not the caller's controlling terminal, and no CAP_SYS_ADMIN to steal it."""
    assert attacks.a.probes[probe]["errno"] == "EPERM"


@pytest.mark.parametrize("probe", ["tty.open_dev_tty", "tty.open_slave_path"])
def test_the_app_cannot_reopen_the_terminal(attacks: AttackRun, probe: str) -> None:
    """/dev/tty and /dev/pts/N are under no Landlock rule of the app: EACCES (the pts is root's 0620 too)."""
    assert attacks.a.probes[probe]["errno"] == "EACCES"


def test_the_app_inherits_only_its_stdio_and_named_variables(attacks: AttackRun) -> None:
    """No fd past 2 (no launcher socket, key memfd or listener), no variable beyond the launcher's list."""
    inherited = attacks.a.probes["inherited"]
    assert sorted(inherited["fds"]) == ["0", "1", "2"], inherited
    assert inherited["env"] == ["HOME", "LANG", "PATH", "SHARNESS_BUNDLE", "SHARNESS_DOOR_FS", "SHARNESS_SESSION",
                                "SHARNESS_SVID", "SHARNESS_TRUST_DOMAIN", "TMPDIR"]
    assert inherited["uid"] not in (0, 65534)
