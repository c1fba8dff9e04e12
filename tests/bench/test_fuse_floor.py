"""The small-file floor on pyfuse3: a null file system through the fs door's serving loop answers the whole
workload, and nothing of it remains (no mount, no mount point, no server or workload process)."""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path

import pytest

from bench import _fuse_floor
from launcher.kernel.fuse_mount import fuse_available

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0 or fuse_available() is not None, reason="needs root and /dev/fuse")]


def _children() -> set[str]:
    return set(Path(f"/proc/self/task/{os.getpid()}/children").read_text().split())


def test_the_null_file_system_serves_the_workload_and_leaves_nothing() -> None:
    children = _children()
    figures = _fuse_floor.small_files(50)
    assert figures["per_s"] > 0 and figures["server_us_per_file"] > 0 and figures["app_us_per_file"] > 0
    assert "sharness-bench-fuse-floor-" not in Path("/proc/self/mountinfo").read_text()
    assert not glob.glob(os.path.join(tempfile.gettempdir(), "sharness-bench-fuse-floor-*"))
    assert _children() == children
