"""A real case-folding directory for tests: an ext4 file system made with `-O casefold` on a loop file,
mounted, with `chattr +F` directories. Needs root, mkfs.ext4 with casefold, chattr, and a kernel built with
CONFIG_UNICODE (it lists /sys/fs/ext4/features/casefold)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

EXT4_CASEFOLD = Path("/sys/fs/ext4/features/casefold")


def unavailable() -> str | None:
    """Why no casefold ext4 can be made here, or None."""
    if os.geteuid() != 0:
        return "needs root to mount a loop file"
    if not EXT4_CASEFOLD.exists():
        return ("this kernel cannot fold case on ext4: no /sys/fs/ext4/features/casefold (built without "
                "CONFIG_UNICODE; mounting a -O casefold file system fails)")
    missing = [tool for tool in ("mkfs.ext4", "chattr", "mount", "umount") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install e2fsprogs; .ci/run installs it)"
    return None


@contextlib.contextmanager
def casefold_mount() -> Iterator[Path]:
    """A mounted casefold-capable ext4 (root directory not folding); unmounted and removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="sharness-casefold-"))
    scratch.chmod(0o755)  # a session's components traverse it to their workspace
    image, mountpoint = scratch / "ext4.img", scratch / "mnt"
    mountpoint.mkdir()
    mounted = False
    try:
        with open(image, "wb") as out:
            out.truncate(32 * 1024 * 1024)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-O", "casefold", str(image)], check=True, capture_output=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(mountpoint)], check=True, capture_output=True)
        mounted = True
        mountpoint.chmod(0o755)
        yield mountpoint
    finally:
        if mounted:
            subprocess.run(["umount", str(mountpoint)], check=False, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def casefold_dir(path: Path) -> Path:
    """Make `path` an empty directory whose lookups fold case (`chattr +F`); what is made in it inherits."""
    path.mkdir(parents=True)
    subprocess.run(["chattr", "+F", str(path)], check=True, capture_output=True)
    return path
