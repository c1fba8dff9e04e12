"""The door's start-up check of overlay mode (doors/shell/_overlay.py): it runs nothing without the overlay."""

from __future__ import annotations

import pytest

from doors.shell._overlay import overlay_problem

WS, UPPER = "/tmp/ws", "/run/sharness/0123abcd/shell/upper"
BIND = f"127 99 254:0 /tmp/ws {WS} ro,relatime - ext4 /dev/vda rw"
OVERLAY = f"134 127 0:49 / {WS} rw,nosuid,nodev,noexec,relatime - overlay overlay rw,userxattr"
SHOWN = f"135 126 0:48 /upper {UPPER} ro,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw"


def test_the_overlay_the_launcher_mounts_passes() -> None:
    assert overlay_problem("\n".join((BIND, OVERLAY, SHOWN)), WS, UPPER) is None


@pytest.mark.parametrize(("lines", "words"), [
    ((BIND, SHOWN), "not a noexec overlay here (ext4)"),  # the overlay missing: the bare read-only bind
    ((SHOWN,), "no mount"),
    ((BIND, OVERLAY.replace("noexec,", ""), SHOWN), "not a noexec overlay"),
    ((BIND, OVERLAY), "not shown read-only"),
    ((BIND, OVERLAY, SHOWN.replace(" ro,", " rw,")), "not shown read-only"),
    ((OVERLAY, BIND, SHOWN), "not a noexec overlay"),  # what is on top counts
])
def test_anything_else_stops_the_door_before_it_runs_a_command(lines: tuple[str, ...], words: str) -> None:
    problem = overlay_problem("\n".join(lines), WS, UPPER)
    assert problem is not None and words in problem


def test_a_workspace_whose_path_has_a_space_is_found_by_its_escaped_mount_point() -> None:
    spaced = "/tmp/my ws"
    lines = (BIND.replace(WS, r"/tmp/my\040ws"), OVERLAY.replace(WS, r"/tmp/my\040ws"), SHOWN)
    assert overlay_problem("\n".join(lines), spaced, UPPER) is None
