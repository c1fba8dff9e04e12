"""What every FUSE handler of the fs door shares: the workspace, the one dispatch, the inodes, the open handles,
and the ways from a FUSE request to a judged path and back to an errno.

The backing tree is reached only by openat2 from the workspace fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS: the app's kernel resolves every symlink in its own namespace before it asks the door, so
a path the door is asked about never goes through one, and one that does (swapped in since) is refused. The
rows are then judged on the very path asked, which is where it leads.
"""

from __future__ import annotations

import errno
import os
import resource
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyfuse3
import trio

from doors._refusal import DoorRefused, Refusal
from doors.fs._decide import decide
from doors.fs._dispatch import Call, Dispatcher
from doors.fs._fuse_errno import errno_of
from doors.fs._fuse_nodes import ROOT_INODE, Node, NodeTable
from doors.fs._openat2 import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, openat2
from doors.fs._ops import PathBusy, Workspace, kernel_refusal, target_of
from doors.fs._paths import MAX_DEPTH, MAX_PATH_BYTES, WorkspacePath, is_temp_name, parse_path, path_refusal
from doors.fs._rules import Facts, FsRows, Op, Target, refuse

RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
# How long the kernel may trust a name or attributes without asking again. The door is the only writer, but the
# HTTP API (and the shell's overlay apply) writes beside the mount: a second at most of a stale `ls`.
ENTRY_TIMEOUT_S = 1.0
ATTR_TIMEOUT_S = 1.0
ROLE = "app"  # the mount is the app's (its own mount namespace holds it)
VIA = {"via": "mount"}
T = TypeVar("T")


def fail(code: int) -> pyfuse3.FUSEError:
    return pyfuse3.FUSEError(code)


def handle_cap(fd_limit: int) -> int:
    """How many mount handles a door with `fd_limit` fds holds: a handle takes up to three (a staged file, the
    file it copies, a directory), and a quarter of the fds stays for the HTTP API, the audit and the device."""
    return max(fd_limit * 3 // 4 // 3, 1)


@dataclass
class MountCore:
    """The state the mount's handlers share (one trio thread runs them all)."""

    workspace: Workspace
    dispatch: Dispatcher
    owner: tuple[int, int]  # the uid and gid every inode shows: the app's, the mount's only user
    nodes: NodeTable = field(default_factory=NodeTable)
    handles: dict[int, Any] = field(default_factory=dict)  # fh → an open file or directory (doors/fs/_fuse_files)
    max_handles: int = field(default_factory=lambda: handle_cap(resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    staged: dict[int, Any] = field(default_factory=dict)  # ino → the write handle whose file getattr shows
    # Called by a handler about to await work that may need other requests answered meanwhile (doors/fs/_fuse_serve
    # FuseReader.lend wakes a parked worker); nothing to do under pyfuse3's own read lock.
    lend_reader: Callable[[], None] = field(default=lambda: None)
    _next_fh: int = 1

    @property
    def rows(self) -> FsRows:
        return self.dispatch.rows

    def room_for_handle(self, call: Call) -> None:
        """Refuse (row `handles`, ENFILE) an open once the app holds `max_handles` files and directories open:
        each holds one to three of the door's fds, and a door out of fds answers nothing, its HTTP API included."""
        if len(self.handles) >= self.max_handles:
            raise self.refused(call, refuse(
                503, "handles", f"the mount has {len(self.handles)} files and directories open, the most the fs "
                "door holds", "close some before opening more"))

    def new_fh(self, handle: Any) -> int:
        fh, self._next_fh = self._next_fh, self._next_fh + 1
        self.handles[fh] = handle
        return fh

    def handle(self, fh: int) -> Any:
        found = self.handles.get(fh)
        if found is None:
            raise fail(errno.EBADF)
        return found

    # -- paths --
    def path_of(self, ino: int) -> WorkspacePath:
        """The path `ino` names now; ENOENT when it has none (unlinked, or forgotten)."""
        path = self.nodes.path(ino)
        if path is None:
            raise fail(errno.ENOENT)
        return path

    def child_path(self, parent: int, name: bytes, op: Op | None = None) -> WorkspacePath:
        """The path of `name` in `parent`, validated as the HTTP API validates a path (the parent's path was, when
        it was looked up: only the new name and the whole length are checked). A refusal is reported, as `op`'s,
        a lookup's as a stat; the door's own temporary names are simply not there."""
        base = self.path_of(parent)
        text = os.fsdecode(name)
        refusal = _name_refusal(base, text, name)
        if refusal is None:
            return base.child(text)
        if op is None and is_temp_name(text):
            raise fail(errno.ENOENT)
        raise self.refused(Call(op or Op.STAT, base, ROLE), refusal)

    def open_at(self, path: WorkspacePath, flags: int) -> int:
        """openat2 beneath the root, through no symlink; OSError as the kernel says."""
        return openat2(self.workspace.root_fd, path.text or ".", flags | os.O_CLOEXEC, 0, RESOLVE)

    def open_node(self, path: WorkspacePath) -> int:
        """An fd of what is at `path`, to read it or set its times and mode through. Never blocking: a FIFO's
        open would wait for a writer, and every request of the door (the HTTP API's too) behind it; opened thus, it
        is judged (not_a_file) like any other kind that is not a file."""
        return self.open_at(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)

    def lstat(self, path: WorkspacePath) -> os.stat_result:
        """What is at `path` (a symlink itself, never followed)."""
        fd = self.open_at(path, os.O_PATH | os.O_NOFOLLOW)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def parent_fd(self, call: Call, path: WorkspacePath) -> int:
        """An O_PATH fd of `path`'s parent; a kernel refusal is reported and raised as its errno."""
        try:
            return self.open_at(path.parent, os.O_PATH | os.O_DIRECTORY)
        except OSError as err:
            raise self.kernel_failed(call, err) from None

    async def unblocked(self, act: Callable[[], T]) -> T:
        """Run `act`, which takes per-path locks without waiting (PathBusy), in the trio thread; a lock held
        elsewhere is waited for in a worker thread, then `act` runs again. An HTTP write holds its path's lock in a
        worker thread while it queues its audit event through the trio thread: waiting for it here would stop
        the door for good, the mount and the HTTP API alike."""
        while True:
            try:
                return act()
            except PathBusy as busy:
                self.lend_reader()
                await trio.to_thread.run_sync(self.workspace.wait_free, busy.real)

    # -- attributes --
    def attrs(self, ino: int, st: Any) -> pyfuse3.EntryAttributes:
        """The entry the kernel caches: the disk's mode, size and times; the app's ids (default_permissions)."""
        attrs = pyfuse3.EntryAttributes()
        attrs.st_ino = ino
        attrs.generation = 0
        attrs.entry_timeout = ENTRY_TIMEOUT_S
        attrs.attr_timeout = ATTR_TIMEOUT_S
        attrs.st_mode = st.st_mode & ~(stat.S_ISUID | stat.S_ISGID) if not stat.S_ISDIR(st.st_mode) else st.st_mode
        attrs.st_nlink = st.st_nlink
        attrs.st_uid, attrs.st_gid = self.owner
        attrs.st_rdev = 0
        attrs.st_size = st.st_size
        attrs.st_blksize = st.st_blksize
        attrs.st_blocks = st.st_blocks
        attrs.st_atime_ns = st.st_atime_ns
        attrs.st_mtime_ns = st.st_mtime_ns
        attrs.st_ctime_ns = st.st_ctime_ns
        return attrs

    def stat_node(self, node: Node) -> Any:
        """A node's stat: its staged file while one is open for writing, else the disk's."""
        staged = self.staged.get(node.ino)
        if staged is not None:
            return staged.stat()
        if node.ino == ROOT_INODE:
            return os.fstat(self.workspace.root_fd)
        path = self.path_of(node.ino)
        try:
            return self.lstat(path)
        except OSError as err:
            raise fail(err.errno or errno.EIO) from None

    # -- refusals --
    def refused(self, call: Call, refusal: Refusal, byte_count: int = 0) -> pyfuse3.FUSEError:
        """Report a refusal (its event names the row) and give the errno to raise."""
        self.dispatch._report({**self.dispatch.event(call, refusal, byte_count=byte_count), **VIA})
        return fail(errno_of(refusal))

    def kernel_failed(self, call: Call, err: OSError) -> pyfuse3.FUSEError:
        """Report what the kernel refused on the backing tree, and pass its errno on."""
        self.dispatch._report({**self.dispatch.event(call, kernel_refusal(err, call.path)), **VIA})
        return fail(err.errno or errno.EIO)

    def precheck(self, call: Call, facts: Facts) -> None:
        """Judge a call before staging anything for it (no reservation: the commit decides again)."""
        refusal = decide(call.op, call.path, self.rows, self.dispatch.meter.usage, facts, dest=call.dest,
                         want_exec=call.want_exec, role=call.role)
        if refusal is not None:
            raise self.refused(call, refusal)

    def settle(self, call: Call, facts: Facts, act: Any, upload: Any = None, extra: dict[str, Any] | None = None
               ) -> Any:
        """The one chokepoint (Dispatcher.settle): decide, audit, act; a refusal or failure as its errno."""
        try:
            return self.dispatch.settle(call, facts, act, upload, {**VIA, **(extra or {})})
        except DoorRefused as refused:
            raise fail(errno_of(refused.refusal)) from None
        except OSError as err:
            raise fail(err.errno or errno.EIO) from None


def _name_refusal(base: WorkspacePath, text: str, name: bytes) -> Refusal | None:
    parsed = parse_path(text)
    if isinstance(parsed, Refusal):
        return parsed
    if parsed.parts != (text,):
        return refuse(400, "path", f"{text!r} is no file name", "name a file")
    if len(base.parts) + 1 > MAX_DEPTH:
        return path_refusal("path", f"the path is {len(base.parts) + 1} levels deep (at most {MAX_DEPTH})",
                            "use a shallower path")
    total = len(base.text.encode("utf-8", "surrogateescape")) + (1 if base.parts else 0) + len(name)
    if total > MAX_PATH_BYTES:
        return path_refusal("path", f"the path is {total} bytes (at most {MAX_PATH_BYTES})", "use a shorter path")
    return None


def target_at(core: MountCore, path: WorkspacePath) -> Target:
    """What the disk holds at `path` (Target() when nothing)."""
    try:
        return target_of(core.lstat(path))
    except FileNotFoundError:
        return Target()
