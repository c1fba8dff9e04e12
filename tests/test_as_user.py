"""The harness's passable view: another uid reaches a path under a 0700 directory in that child alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher.kernel._sys import libc
from tests import as_user
from tests.launcher.kernel.kernel_child import run_child

pytestmark = pytest.mark.root
MS_SHARED = 1 << 20


@pytest.fixture
def closed() -> Iterator[Path]:
    """/tmp/…(0700)/inner(0700)/tree(0755) holding a file, a sibling of tree, and a symlink beside it, on a
    shared mount (as / is on systemd machines: a child's mounts there would come back to the host)."""
    top = Path(tempfile.mkdtemp(prefix="sh-test-closed-"))
    libc.mount("tmpfs", str(top), "tmpfs", 0, "mode=0700,size=64k")
    try:
        libc.mount(None, str(top), None, MS_SHARED)
        (top / "inner" / "tree").mkdir(parents=True)
        (top / "inner").chmod(0o700)
        (top / "inner" / "tree").chmod(0o755)
        (top / "inner" / "tree" / "file").write_text("reached")
        (top / "sibling").write_text("still here")
        (top / "link").symlink_to("sibling")
        yield top
    finally:
        while os.path.ismount(top):  # stacked copies too, should a child's mounts ever come back
            libc.umount2(str(top), libc.MNT_DETACH)
        shutil.rmtree(top, ignore_errors=True)


def _read_as_nobody(paths: tuple[str, ...] | None, target: Path) -> object:
    def setup(_wfd: int) -> None:
        if paths is not None:
            as_user.open_ancestors(paths)
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)

    return run_child(setup, lambda: target.read_text()).report


def test_the_child_passes_every_closed_directory_and_the_host_is_left_as_it_was(closed: Path) -> None:
    target = closed / "inner" / "tree" / "file"
    assert _read_as_nobody(None, target)["errno"] == 13  # type: ignore[index]  # the premise: EACCES
    assert _read_as_nobody((str(target),), target) == {"value": "reached"}

    def probe() -> object:
        return {"sibling": (closed / "sibling").read_text(), "link": os.readlink(closed / "link"),
                "mode": oct((closed / "inner").stat().st_mode & 0o777)}

    def setup(_wfd: int) -> None:
        as_user.open_ancestors((str(target),))

    assert run_child(setup, probe).report == {"value": {"sibling": "still here", "link": "sibling", "mode": "0o711"}}
    host_mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    assert [point for point in host_mounts if point.startswith(str(closed))] == [str(closed)]  # ours never leave
    assert (closed.stat().st_mode & 0o777, (closed / "inner").stat().st_mode & 0o777) == (0o700, 0o700)


def test_as_a_program_it_runs_the_command_as_the_user_with_this_tree_importable() -> None:
    code = "import os, launcher, tests.as_user; print(os.getuid(), os.getgroups())"
    done = subprocess.run([*as_user.argv(65534), sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False, cwd=as_user.PROJECT)
    assert (done.returncode, done.stdout.strip()) == (0, "65534 []"), done.stderr
