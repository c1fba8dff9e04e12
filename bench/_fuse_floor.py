"""The floor of any fs door on pyfuse3 for the small-file workload: a file system that does nothing.

The issue asks for the mount through pyfuse3 (trio-native, as the doors are), and each small file is six
requests whatever the door decides (the new name's LOOKUP, the directory's GETATTR that default_permissions asks
after each create, CREATE, WRITE, FLUSH, RELEASE: docs/decisions/fs-mount.md). Here pyfuse3 serves the same mount
the launcher makes (launcher/kernel/fuse_mount.py: the same options, write-only handles with direct_io, the same
1 s timeouts) through the fs door's own serving loop (doors/fs/_fuse_serve.py `serve_mount`: its request reader,
its worker count), and answers every request from memory: no rule, no disk, no audit. The same
workload (bench/_mount_workload.py) runs in a child that sees the mount in a mount namespace of its own, as
another uid. What it reaches is what pyfuse3, trio and the kernel's round trips allow a door before it does any
work at all. Needs root and /dev/fuse; nothing outlives it (a detached mount, a namespace of a child, a device
whose server is killed).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from launcher.kernel import fuse_mount

APP_UID = 0x7FFE_0A03  # numeric, no account, outside the range sessions draw from
TIMEOUT_S = 1.0  # the fs door's entry and attribute timeouts (doors/fs/_fuse_core.py)
TREE = str(Path(__file__).resolve().parent.parent)
# The workload's child, in a mount namespace of its own (unshare(1), private propagation): it attaches the
# detached mount there, as the app's child does in a session, drops to APP_UID and runs the same loop.
WORKLOAD = """import json, os, sys
sys.path.insert(0, {tree!r})
from bench import _mount_workload
from launcher.kernel import fuse_mount
mount_fd, point, files, uid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
target = os.open(point, os.O_PATH | os.O_DIRECTORY)
fuse_mount.attach(mount_fd, target)
os.setgid(uid)
os.setuid(uid)
rate, app_us, _span = _mount_workload._small_files(point + "/small", files)
print(json.dumps({{"rate": rate, "app_us": app_us}}))
"""


def _serve(device_fd: int, ready_fd: int) -> None:
    """The null file system's server (a forked child): answers until killed."""
    import types

    import pyfuse3
    import trio

    from doors.fs.server import mount_front

    class NullOps(pyfuse3.Operations):
        """Directories and files kept as names and sizes in memory."""

        enable_writeback_cache = False

        def __init__(self) -> None:
            super().__init__()
            self.core = types.SimpleNamespace()  # serve_mount hands its reader's lend() to ops.core
            self.names: dict[tuple[int, bytes], int] = {}
            self.kinds: dict[int, int] = {pyfuse3.ROOT_INODE: stat.S_IFDIR | 0o755}
            self.sizes: dict[int, int] = {}

        def _attrs(self, inode: int) -> Any:
            attrs = pyfuse3.EntryAttributes()
            attrs.st_ino, attrs.generation = inode, 0
            attrs.entry_timeout = attrs.attr_timeout = TIMEOUT_S
            attrs.st_mode, attrs.st_nlink = self.kinds[inode], 1
            attrs.st_uid = attrs.st_gid = APP_UID
            attrs.st_size = self.sizes.get(inode, 0)
            attrs.st_blksize, attrs.st_blocks = 4096, 0
            return attrs

        def _new(self, parent: int, name: bytes, mode: int) -> int:
            inode = len(self.kinds) + 1
            self.kinds[inode] = mode
            self.names[(parent, name)] = inode
            return inode

        async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> Any:
            inode = self.names.get((parent_inode, name))
            if inode is None:
                raise pyfuse3.FUSEError(errno.ENOENT)
            return self._attrs(inode)

        async def getattr(self, inode: int, ctx: Any = None) -> Any:
            return self._attrs(inode)

        async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any) -> Any:
            return self._attrs(self._new(parent_inode, name, stat.S_IFDIR | (mode & 0o7777)))

        async def create(self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any) -> Any:
            inode = self._new(parent_inode, name, stat.S_IFREG | (mode & 0o7777))
            write_only = (flags & os.O_ACCMODE) == os.O_WRONLY
            return pyfuse3.FileInfo(fh=inode, keep_cache=False, direct_io=write_only), self._attrs(inode)

        async def write(self, fh: int, off: int, buf: bytes) -> int:
            self.sizes[fh] = max(self.sizes.get(fh, 0), off + len(buf))
            return len(buf)

        async def flush(self, fh: int) -> None:
            return None

        async def release(self, fh: int) -> None:
            return None

    os.write(ready_fd, b"1")  # the kernel's INIT waits on the device until the loop reads it
    os.close(ready_fd)
    front = mount_front()
    assert front is not None, "pyfuse3 is installed with the bench's extras"
    trio.run(front.serve_mount, NullOps(), device_fd)


def _cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat", encoding="ascii") as schedstat:
        return int(schedstat.read().split()[0])


def small_files(files: int) -> dict[str, float]:
    """files/s through the null pyfuse3 file system, its server's CPU µs a file, the workload's own CPU µs a file."""
    mounted = fuse_mount.make_workspace_mount(0, 0)
    point = tempfile.mkdtemp(prefix="sharness-bench-fuse-floor-")
    server = -1
    try:
        ready_read, ready_write = os.pipe()
        server = os.fork()
        if server == 0:
            try:
                os.close(ready_read)
                _serve(mounted.device_fd, ready_write)
            finally:
                os._exit(1)
        os.close(ready_write)
        mounted.close_device()  # the server's copy only: its death aborts the connection
        if os.read(ready_read, 1) != b"1":
            raise RuntimeError("the null pyfuse3 file system did not start")
        os.close(ready_read)
        before = _cpu_ns(server)
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c",
                               WORKLOAD.format(tree=TREE), str(mounted.mount_fd), point, str(files), str(APP_UID)],
                              pass_fds=(mounted.mount_fd,), capture_output=True, text=True, timeout=600)
        reported = done.stdout if done.returncode == 0 else ""
        server_us = (_cpu_ns(server) - before) / 1000 / files
        if not reported:
            raise RuntimeError(f"the small-file loop on the null pyfuse3 file system failed: {done.stderr[-2000:]}")
        figures = json.loads(reported)
        return {"per_s": figures["rate"], "server_us_per_file": server_us, "app_us_per_file": figures["app_us"]}
    finally:
        if server > 0:
            os.kill(server, signal.SIGKILL)
            os.waitpid(server, 0)
        mounted.close()
        os.rmdir(point)
