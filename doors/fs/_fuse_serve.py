"""Serve the workspace mount: the FUSE device fd the launcher handed over, through pyfuse3, in the door's own
trio loop beside its HTTP API, with the same workspace, rows, quotas and audit (one Dispatcher for both)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pyfuse3

from doors.fs._api import FsApi
from doors.fs._fuse_core import MountCore
from doors.fs._fuse_fileops import MountOps
from pki.vocabulary import MOUNT_FD_ROW, MOUNT_OWNER_ROW

# Requests the door works on at once: each runs in the trio thread (the handlers' calls are short), several so
# that a commit waiting on the path lock does not stall every other request.
MAX_TASKS = 16


def mount_device(rows: Mapping[str, Any]) -> int | None:
    """The FUSE device fd the contract names, or None when the app does not mount the workspace."""
    fd = rows.get(MOUNT_FD_ROW)
    if not isinstance(fd, int) or isinstance(fd, bool):
        return None
    os.fstat(fd)  # fail at start, naming the fd, rather than on the first request
    return fd


def mount_ops(api: FsApi, rows: Mapping[str, Any]) -> MountOps:
    """The mount's handlers over the HTTP API's own workspace and dispatch."""
    owner = rows.get(MOUNT_OWNER_ROW)
    if not (isinstance(owner, list) and len(owner) == 2 and all(isinstance(i, int) for i in owner)):
        raise ValueError(f"the fs door needs rows.{MOUNT_OWNER_ROW} = [uid, gid] to serve the mount")
    return MountOps(MountCore(api.workspace, api.dispatch, (owner[0], owner[1])))


async def serve_mount(ops: MountOps, device_fd: int) -> None:
    """Answer the mount's requests until cancelled (the door stopping) or the connection ends."""
    pyfuse3.init(ops, f"/dev/fd/{device_fd}", set())
    try:
        await pyfuse3.main(min_tasks=1, max_tasks=MAX_TASKS)
    finally:
        pyfuse3.close(unmount=False)
