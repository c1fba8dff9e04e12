"""Every way to a door the app has no edge to. First barrier: the app's private root holds only the sockets of
its edges, and its proc (hidepid=invisible) shows no process of another uid, so each name gives ENOENT.
Behind it, shown with the app's uid and groups in the host's mounts (as_app_outside.py): the socket file
admits only the edge-listed clients' group (DAC), /proc of a door is another uid's (ptrace access check).
And the door itself refuses the edge (403) when something bypasses the file: the test, as root, replays the
app's own SVID to the keys door."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root

DOORS = ("keys", "fs")
PROC_WAYS = ["proc_fd_listener", "proc_root", "proc_cwd", "proc_svid_memfd"]


def test_the_layer_behind_ran_with_the_apps_uid_and_edge_group(attacks: AttackRun) -> None:
    """as_app_outside.py had the app's uid, and its groups reached the fs door (the app's one edge)."""
    assert attacks.outside_as_app["outside.identity"]["uid"] == attacks.a.probes["inherited"]["uid"]
    assert attacks.outside_as_app["control.fs_relative_cwd"]["result"] == "connected"
    assert "outside.done" in attacks.outside_as_app


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("way", PROC_WAYS)
def test_a_doors_proc_entries_are_not_even_visible_to_the_app(attacks: AttackRun, way: str, door: str) -> None:
    """/proc/<door>/fd/5 (its listener), /root, /cwd, fd/4 (its SVID memfd): ENOENT, the app's proc is its
    own pid namespace's, where the door is not (and hidepid=invisible: the door is another uid's process)."""
    assert attacks.a.probes[f"door.{way}.{door}"]["errno"] == "ENOENT"


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("way", PROC_WAYS)
def test_behind_hidepid_a_doors_proc_entries_refuse_the_apps_uid(attacks: AttackRun, way: str, door: str) -> None:
    """The same entries in the host's /proc as the app's uid: EACCES, the kernel's ptrace access check
    (another uid, the door is not dumpable)."""
    assert attacks.outside_as_app[f"door.{way}.{door}"]["errno"] == "EACCES"


@pytest.mark.parametrize("door", DOORS)
def test_a_door_listener_cannot_be_copied_with_pidfd_getfd(attacks: AttackRun, door: str) -> None:
    """pidfd_open takes a pid number, not a /proc path (hidepid does not hide it): in the app's pid namespace
    the door's pid does not exist (ESRCH). Outside it, as the app's uid, pidfd_getfd(door, 5) reaches the
    kernel's ptrace attach check: EPERM (pidfd_getfd is not in the seccomp list)."""
    assert attacks.a.probes[f"door.pidfd_getfd.{door}"]["errno"] == "ESRCH"
    assert attacks.outside_as_app[f"door.pidfd_getfd.{door}"]["errno"] == "EPERM"


@pytest.mark.parametrize("way", ["keys_absolute", "keys_relative_cwd", "keys_symlink"])
def test_the_keys_socket_is_not_in_the_apps_root(attacks: AttackRun, way: str) -> None:
    """Absolute path, relative from a cwd in doors/, a symlink in $TMPDIR: ENOENT, the private root holds
    only edge-listed sockets (the same cwd trick reaches fs.sock, an edge: control)."""
    assert attacks.a.probes[f"door.{way}"]["errno"] == "ENOENT"
    assert attacks.a.probes["control.fs_relative_cwd"]["result"] == "connected"


@pytest.mark.parametrize("way", ["keys_absolute", "keys_relative_cwd", "keys_symlink"])
def test_behind_the_root_the_keys_socket_refuses_the_apps_groups(attacks: AttackRun, way: str) -> None:
    """The same names in the host's mounts as the app's uid and groups: EACCES, the socket file's group
    admits only edge-listed clients (fs.sock, the app's edge, connects by the same cwd trick)."""
    assert attacks.outside_as_app[f"door.{way}"]["errno"] == "EACCES"
    assert attacks.outside_as_app["control.fs_relative_cwd"]["result"] == "connected"


def test_the_keys_socket_cannot_be_hard_linked(attacks: AttackRun) -> None:
    """link(keys.sock, $TMPDIR/…): ENOENT in the app's root (nothing to link); in the host's mounts, as the
    app's uid, EPERM from fs.protected_hardlinks (a link would keep the mode anyway)."""
    assert attacks.a.probes["door.keys_hardlink"]["errno"] == "ENOENT"
    assert attacks.outside_as_app["door.keys_hardlink"]["errno"] == "EPERM"


def test_another_sessions_door_socket_is_out_of_reach(attacks: AttackRun) -> None:
    """Session B's fs.sock: ENOENT (A's private root holds no other session's path); in the host's mounts,
    as A's app uid and groups, EACCES (B's socket group admits only B's app)."""
    assert attacks.a.probes["other_session.fs_socket"]["errno"] == "ENOENT"
    assert attacks.outside_as_app["other_session.fs_socket"]["errno"] == "EACCES"


def test_the_door_refuses_the_edge_when_the_socket_file_is_bypassed(attacks: AttackRun) -> None:
    """The last lock: root (past the file's DAC) presents B's app SVID to B's keys door: 403 row edges,
    audited once as transport.refused stage edge with the peer's uid."""
    assert attacks.outside.keys_refusal == {
        "who": "keys", "row": "edges",
        "reason": "edge app->keys is not in the manifest row `edges`: add it there to allow this call"}
    refused = [e for e in attacks.audit(attacks.sid_b) if e.get("kind") == "transport.refused"]
    assert [(e["door"], e["stage"], e["client_role"], e["peer_uid"]) for e in refused] == [("keys", "edge", "app", 0)]
