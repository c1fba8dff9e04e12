"""Every way to a door the app has no edge to. The socket file admits only the edge-listed clients' group
(DAC), /proc of a door is another uid's (ptrace access check), and the door itself refuses the edge (403)
when something bypasses the file: the test, as root, replays the app's own SVID to the keys door."""

from __future__ import annotations

import pytest

from tests.attacks.conftest import AttackRun

pytestmark = pytest.mark.root

DOORS = ("keys", "fs")


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("way", ["proc_fd_listener", "proc_root", "proc_cwd", "proc_svid_memfd"])
def test_a_door_is_not_reached_through_its_proc_entries(attacks: AttackRun, way: str, door: str) -> None:
    """/proc/<door>/fd/5 (its listener), /root, /cwd, fd/4 (its SVID memfd): EACCES, the kernel's ptrace
    access check (another uid; the door is not dumpable; Landlock refuses ptrace outside the domain)."""
    assert attacks.a.probes[f"door.{way}.{door}"]["errno"] == "EACCES"


@pytest.mark.parametrize("door", DOORS)
def test_a_door_listener_cannot_be_copied_with_pidfd_getfd(attacks: AttackRun, door: str) -> None:
    """pidfd_getfd(door, 5): EPERM, the kernel's ptrace attach check (pidfd_getfd is not in the seccomp list)."""
    assert attacks.a.probes[f"door.pidfd_getfd.{door}"]["errno"] == "EPERM"


@pytest.mark.parametrize("way", ["keys_absolute", "keys_relative_cwd", "keys_symlink"])
def test_the_keys_socket_refuses_the_app_by_any_name(attacks: AttackRun, way: str) -> None:
    """Absolute path, relative from a cwd in doors/, a symlink in $TMPDIR: EACCES, the socket file's group."""
    assert attacks.a.probes[f"door.{way}"]["errno"] == "EACCES"
    assert attacks.a.probes["control.fs_relative_cwd"]["errno"] is None  # the same trick reaches an edge door


def test_the_keys_socket_cannot_be_hard_linked(attacks: AttackRun) -> None:
    """link(keys.sock, $TMPDIR/…): EPERM from fs.protected_hardlinks (a link would keep the mode anyway)."""
    assert attacks.a.probes["door.keys_hardlink"]["errno"] == "EPERM"


def test_another_sessions_door_socket_refuses_the_app(attacks: AttackRun) -> None:
    """Session B's fs.sock admits only B's app: EACCES for A's app."""
    assert attacks.a.probes["other_session.fs_socket"]["errno"] == "EACCES"


def test_the_door_refuses_the_edge_when_the_socket_file_is_bypassed(attacks: AttackRun) -> None:
    """The second lock: root (past the file's DAC) presents B's app SVID to B's keys door: 403 row edges,
    audited once as transport.refused stage edge with the peer's uid."""
    assert attacks.outside.keys_refusal == {
        "who": "keys", "row": "edges",
        "reason": "edge app->keys is not in the manifest row `edges`: add it there to allow this call"}
    refused = [e for e in attacks.audit(attacks.sid_b) if e.get("kind") == "transport.refused"]
    assert [(e["door"], e["stage"], e["client_role"], e["peer_uid"]) for e in refused] == [("keys", "edge", "app", 0)]
