"""The compiled pid-namespace init (launcher/kernel/_init/sharness_init.c), when this checkout built it.

`make` builds it with the system's C compiler (`cc -static`); an installation without one runs the same wait
loop in Python (launcher/lifecycle/app_init.py), which holds a copy of the launcher's pages for the session.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

INIT_BINARY = str(Path(__file__).resolve().with_name("_init") / "sharness-init")


def usable_init_binary(path: str = INIT_BINARY) -> str | None:
    """`path` when it is a regular executable file root owns and only root may change, else None."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    only_root_writes = info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return path if stat.S_ISREG(info.st_mode) and only_root_writes and info.st_mode & stat.S_IXOTH else None
