"""The mount table: proc(5)'s mountinfo lines parsed, escapes undone, mounts beneath a path; an fd's mount."""

from __future__ import annotations

import os

from launcher.kernel.mountinfo import Mount, fstype_of, mount_id_of, mount_table, mounts_beneath, parse_mountinfo

TEXT = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
42 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw
43 42 0:4 net:[4026532177] /run/netns/sh-a rw shared:2 master:1 - nsfs nsfs rw
50 27 0:40 / /srv/my\\040dir/in\\134side rw - tmpfs tmpfs rw
51 27 0:41 / /srv/my rw - tmpfs tmpfs rw
not a mount line
"""


def test_mountinfo_lines_with_optional_fields_and_escapes() -> None:
    mounts = parse_mountinfo(TEXT)
    assert mounts[0] == Mount(22, "/proc", "proc")
    assert mounts[3] == Mount(43, "/run/netns/sh-a", "nsfs")  # two optional fields before the separator
    assert mounts[4] == Mount(50, "/srv/my dir/in\\side", "tmpfs")
    assert len(mounts) == 6


def test_mounts_beneath_a_path_are_strictly_inside_it() -> None:
    mounts = parse_mountinfo(TEXT)
    assert mounts_beneath(mounts, "/run") == ("/run/netns", "/run/netns/sh-a")
    assert mounts_beneath(mounts, "/run/netns/sh-a") == ()
    assert mounts_beneath(mounts, "/srv/my") == ()  # "/srv/my dir" is a sibling, not inside
    assert mounts_beneath(mounts, "/") == tuple(sorted(m.mount_point for m in mounts if m.mount_point != "/"))


def test_the_fstype_of_a_mount_id() -> None:
    mounts = parse_mountinfo(TEXT)
    assert fstype_of(mounts, 43) == "nsfs" and fstype_of(mounts, 999) == ""


def test_an_fds_mount_is_in_this_processes_table() -> None:
    fd = os.open("/proc/self", os.O_PATH)
    try:
        assert fstype_of(mount_table(), mount_id_of(fd)) == "proc"
    finally:
        os.close(fd)


def test_statx_gives_the_mnt_id_fdinfo_shows() -> None:
    for path in ("/", "/proc/self", "/dev/null"):
        fd = os.open(path, os.O_PATH)
        try:
            with open(f"/proc/self/fdinfo/{fd}") as info:
                shown = next(int(line.split(":")[1]) for line in info if line.startswith("mnt_id:"))
            assert mount_id_of(fd) == shown, path
        finally:
            os.close(fd)
