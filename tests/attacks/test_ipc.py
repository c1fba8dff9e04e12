"""Signals and abstract unix sockets: the pid namespace, Landlock scoping (ABI 6) and the uid boundary."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root


@pytest.mark.parametrize("probe", ["signal.launcher_kill", "signal.launcher_pidfd", "signal.fs_door_kill"])
def test_the_app_cannot_signal_the_launcher_or_a_door(attacks: AttackRun, probe: str) -> None:
    """kill() and pidfd_send_signal() on the launcher (root) and the fs door (the workspace owner), by their
    host pids: ESRCH, they do not exist in the app's pid namespace. Behind it, another uid and Landlock's
    signal scoping say EPERM (tests/attacks/test_pid_namespace.py: kill(pid, 0) as the app's uid outside the
    namespace; tests/launcher/kernel/test_landlock.py: scoping for the same uid)."""
    assert attacks.a.probes[probe]["errno"] == "ESRCH"


def test_the_signalled_pid_was_the_launcher(attacks: AttackRun) -> None:
    assert attacks.a.probes["signal.launcher_kill"]["target"] == attacks.a.proc.pid


def test_an_abstract_socket_bound_outside_the_domain_is_refused_by_landlock_scoping(attacks: AttackRun) -> None:
    """The test bound it in the app's own netns as an unconfined process: EPERM is Landlock's scope (a name
    nobody bound gives ECONNREFUSED, and the app's own listener accepts its child)."""
    assert attacks.a.probes["abstract.outside_listener"]["errno"] == "EPERM"
    assert attacks.a.probes["control.abstract_missing"]["errno"] == "ECONNREFUSED"
    assert attacks.a.probes["control.abstract_own"] == {"probe": "control.abstract_own", "exit": 0}
