"""The mount's open files: open, create, read, write, flush, fsync, release, setattr (size, mode, owner, times).

Opening for reading is judged and audited as a read; opening for writing is judged at once (read_only,
append_only, hidden, max_files: the app's open() fails with the row's errno) and staged; the staged bytes are
judged again, whole, at the commit (doors/fs/_fuse_files.py), whose refusal close() returns.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from typing import Any, TypeVar

import pyfuse3
import trio

from doors.fs._dispatch import Call
from doors.fs._fuse_core import ROLE, fail
from doors.fs._fuse_files import (
    ReadHandle,
    StagedAppend,
    StagedFile,
    commit,
    ensure_writable,
    stage_append,
    stage_file,
    truncate,
    write,
)
from doors.fs._fuse_nodes import Node
from doors.fs._fuse_ops import Ctx, NameOps
from doors.fs._ops import target_of
from doors.fs._paths import WorkspacePath
from doors.fs._rules import Facts, Op, Target, decide_names, prefix_of, refuse

_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)
NameOpsT = TypeVar("NameOpsT", bound=NameOps)


def _opened(flags: int, creating: bool) -> str:
    return "create" if creating else "truncate" if flags & os.O_TRUNC else "write"


def _file_info(fh: int, flags: int) -> pyfuse3.FileInfo:
    """What the kernel keeps of an open file. Nothing cached across opens (keep_cache off: the door may have
    changed the file). A write-only handle can be neither read nor mmapped, so its writes need not pass through
    the kernel's page cache: direct_io hands the app's own pages to the door, one copy fewer per write and no
    cached copy of bytes the door has not judged yet (docs/decisions/fs-mount.md)."""
    return pyfuse3.FileInfo(fh=fh, keep_cache=False, direct_io=(flags & os.O_ACCMODE) == os.O_WRONLY)


def _kernel_errors_as_errnos(cls: type[NameOpsT]) -> type[NameOpsT]:
    """An OSError in a handler is the backing tree refusing: the app gets its errno. Anything else is a bug in the
    door, which ends the door (pyfuse3's loop re-raises it) and with it the session: fail closed."""
    for name in HANDLERS:
        handler = getattr(cls, name)

        @functools.wraps(handler)
        async def wrapped(self: NameOps, *args: Any, __handler: Any = handler) -> Any:
            try:
                return await __handler(self, *args)
            except OSError as err:
                raise fail(err.errno or errno.EIO) from None

        setattr(cls, name, wrapped)
    return cls


HANDLERS = ("lookup", "getattr", "readlink", "opendir", "readdir", "mkdir", "unlink", "rmdir", "rename", "statfs",
            "open", "create", "read", "write", "flush", "fsync", "release", "setattr")


@_kernel_errors_as_errnos
class MountOps(NameOps):
    """Every handler the fs door's mount answers."""

    async def open(self, inode: int, flags: int, ctx: Ctx) -> pyfuse3.FileInfo:
        core = self.core
        node = core.nodes.get(inode)
        if node is None:
            raise fail(errno.ENOENT)
        path = core.path_of(inode)
        writing = (flags & os.O_ACCMODE) in _WRITE_MODES or flags & os.O_TRUNC
        core.room_for_handle(Call(Op.WRITE if writing else Op.READ, path, ROLE))
        handle = self._open_write(node, path, flags) if writing else self._open_read(node, path)
        core.nodes.opened(node)
        return _file_info(core.new_fh(handle), flags)

    def _open_read(self, node: Node, path: WorkspacePath) -> ReadHandle:
        core = self.core
        staged = core.staged.get(node.ino)
        call = Call(Op.READ, path, ROLE)
        try:
            # Another handle is writing it: read what it staged, as a reader of a local file would (judged and
            # audited as any read: an unaudited read of it used to be the result).
            fd = os.dup(staged.temp_fd) if isinstance(staged, StagedFile) else core.open_node(path)
        except OSError as err:
            raise core.kernel_failed(call, err) from None
        try:
            facts = Facts(target=target_of(os.fstat(fd)), real_path=path)
            core.settle(call, facts, lambda: None)
        except BaseException:
            os.close(fd)
            raise
        return ReadHandle(node, fd)

    def _open_write(self, node: Node, path: WorkspacePath, flags: int) -> StagedFile | StagedAppend:
        core = self.core
        appending = bool(flags & os.O_APPEND) and not flags & os.O_TRUNC
        call = Call(Op.APPEND if appending else Op.WRITE, path, ROLE)
        try:
            fd = core.open_node(path)
        except OSError as err:
            raise core.kernel_failed(call, err) from None
        try:
            target = target_of(os.fstat(fd))
            core.precheck(call, Facts(target=target, real_path=path))
            if appending:
                staged: StagedFile | StagedAppend = stage_append(core, node, path, fd, "append")
                fd = -1  # the handle reads through it now
            else:
                staged = stage_file(core, node, path, copy_from=-1 if flags & os.O_TRUNC else fd,
                                    want_exec=target.executable, opened=_opened(flags, False),
                                    was_executable=target.executable)
                if flags & os.O_TRUNC:
                    staged.dirty = True  # an O_TRUNC open empties the file even if nothing is written
        finally:
            if fd >= 0:
                os.close(fd)
        core.staged[node.ino] = staged
        return staged

    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Ctx
                     ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        core = self.core
        path = core.child_path(parent_inode, name, Op.WRITE)
        appending = bool(flags & os.O_APPEND)
        call = Call(Op.APPEND if appending else Op.WRITE, path, ROLE)
        refusal = decide_names(call.op, path, core.rows, role=ROLE)  # a hidden name exists for no one
        if refusal is not None:
            raise core.refused(call, refusal)
        core.room_for_handle(call)
        existing = core.nodes.child(parent_inode, path.name)
        # One walk to the directory serves the existence check and the staging (the name itself: fstatat, never
        # followed, as the lstat of a walk to it would see it).
        parent_fd = core.parent_fd(call, path)
        try:
            try:
                on_disk = core.workspace.stat_at(parent_fd, path.name)
            except OSError as err:
                raise core.kernel_failed(call, err) from None
            if on_disk.exists or (existing is not None and existing.pending):
                raise fail(errno.EEXIST)  # the kernel asks create only for a name it found missing
            core.precheck(call, Facts(target=Target(), real_path=path))
            node = core.nodes.place(parent_inode, path.name, pending=True)
            want_exec = bool(mode & 0o111) and prefix_of(path, core.rows.exec, core.rows.casefold_dirs) is not None
            try:
                if appending:
                    staged: StagedFile | StagedAppend = stage_append(core, node, path, -1, "create")
                else:
                    staged = stage_file(core, node, path, copy_from=-1, want_exec=want_exec, opened="create",
                                        parent_fd=parent_fd)
            except BaseException:
                core.nodes.detach(node)
                raise
        finally:
            os.close(parent_fd)
        staged.dirty = True  # a created file is committed at close even when empty
        core.staged[node.ino] = staged
        core.nodes.remember(node)
        core.nodes.opened(node)
        return _file_info(core.new_fh(staged), flags), core.attrs(node.ino, staged.stat())

    async def read(self, fh: int, off: int, size: int) -> bytes:
        return self.core.handle(fh).read(off, size)

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = ensure_writable(self.core.handle(fh))
        return write(self.core, handle, off, buf)

    async def flush(self, fh: int) -> None:
        await self._commit(fh, "flush")

    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = await self._commit(fh, "fsync")
        if isinstance(handle, StagedFile):
            os.fsync(handle.temp_fd)

    async def _commit(self, fh: int, closed: str) -> Any:
        core = self.core
        handle = core.handle(fh)
        try:
            await core.unblocked(lambda: commit(core, handle, closed))
        except pyfuse3.FUSEError:
            await self._forget_refused(handle)
            raise
        return handle

    async def _forget_refused(self, handle: Any) -> None:
        """After a refused commit the kernel must forget what the app wrote: its cached pages and size, and a
        file that was never committed (its name goes: a refused file never appears)."""
        node: Node = handle.node
        if node.pending and node.parent is not None:
            parent, name = node.parent, os.fsencode(node.name)
            self.core.nodes.detach(node)
            pyfuse3.invalidate_entry_async(parent, name, ignore_enoent=True)
        # The kernel's invalidation waits for pages a READ in flight holds: another worker must answer it meanwhile.
        self.core.lend_reader()
        await trio.to_thread.run_sync(_invalidate, node.ino)

    async def release(self, fh: int) -> None:
        core = self.core
        released: Any = core.handles.pop(fh)
        node: Node = released.node
        try:
            if isinstance(released, (StagedFile, StagedAppend)):
                try:
                    # mmap'd pages written back after the last close
                    await core.unblocked(lambda: commit(core, released, "release"))
                except pyfuse3.FUSEError:
                    await self._forget_refused(released)
                if node.pending:  # never committed (refused at flush): its name goes now
                    await self._forget_refused(released)
        finally:
            if core.staged.get(node.ino) is released:
                del core.staged[node.ino]
            released.close()
            core.nodes.closed(node)

    async def setattr(self, inode: int, attr: pyfuse3.EntryAttributes, fields: pyfuse3.SetattrFields,
                      fh: int | None, ctx: Ctx) -> pyfuse3.EntryAttributes:
        core = self.core
        node = core.nodes.get(inode)
        if node is None:
            raise fail(errno.ENOENT)
        path = core.path_of(inode)
        if fields.update_uid or fields.update_gid:
            raise core.refused(Call(Op.WRITE, path, ROLE), refuse(
                403, "workspace", f"{path}: files keep the workspace owner", "leave ownership as it is"))
        if fields.update_size:
            await self._truncate(node, path, attr.st_size, fh)
        if fields.update_mode:
            self._chmod(node, path, attr.st_mode)
        if fields.update_atime or fields.update_mtime:
            self._times(node, path, attr, fields)
        return core.attrs(inode, core.stat_node(node))

    def _times(self, node: Node, path: WorkspacePath, attr: pyfuse3.EntryAttributes,
               fields: pyfuse3.SetattrFields) -> None:
        """touch: times of a file or directory, judged as a change to it (never in read_only, hidden or
        append_only paths); set through an fd the door opened (futimens: its filter refuses utimensat by path)."""
        core = self.core
        call = Call(Op.WRITE, path, ROLE)
        refusal = decide_names(Op.WRITE, path, core.rows, role=ROLE)
        if refusal is None and prefix_of(path, core.rows.append_only, core.rows.casefold_dirs) is not None:
            refusal = refuse(403, "append_only", f"{path} is in append_only: its times stay", "append to it instead")
        if refusal is not None:
            raise core.refused(call, refusal)
        current = core.stat_node(node)
        times = (attr.st_atime_ns if fields.update_atime else current.st_atime_ns,
                 attr.st_mtime_ns if fields.update_mtime else current.st_mtime_ns)
        staged = core.staged.get(node.ino)

        def act() -> None:
            if isinstance(staged, StagedFile):
                os.utime(staged.temp_fd, ns=times)
                return
            fd = core.open_node(path)
            try:
                os.utime(fd, ns=times)
            finally:
                os.close(fd)

        kind = target_of(current).kind  # a FIFO or a device is refused (not_a_file) before anything opens it
        # Judged as a mkdir of an existing directory or a zero-byte change of a file: names, no quota.
        op = Op.MKDIR if kind == "dir" else Op.WRITE
        core.settle(Call(op, path, ROLE), Facts(target=Target(kind), real_path=path), act, extra={"change": "times"})

    async def _truncate(self, node: Node, path: WorkspacePath, size: int, fh: int | None) -> None:
        core = self.core
        handle = core.handles.get(fh) if fh is not None else core.staged.get(node.ino)
        if fh is None and isinstance(handle, StagedAppend):
            handle = None  # another handle's appends, which cannot shrink: truncate(2) by path is its own write
        if isinstance(handle, (StagedFile, StagedAppend)):
            truncate(core, handle, size)
            return
        # truncate(2) by path: a write of its own, committed now.
        own = self._open_write(node, path, os.O_WRONLY | (os.O_TRUNC if size == 0 else 0))
        try:
            truncate(core, own, size)
            await core.unblocked(lambda: commit(core, own, "truncate"))
        finally:
            if core.staged.get(node.ino) is own:
                del core.staged[node.ino]
            own.close()

    def _chmod(self, node: Node, path: WorkspacePath, mode: int) -> None:
        """Only the exec bit means anything (0755 or 0644, as the exec row allows); other bits are the door's."""
        core = self.core
        want_exec = bool(mode & 0o111)
        call = Call(Op.WRITE, path, ROLE, want_exec=want_exec)
        st = core.stat_node(node)
        if stat.S_ISDIR(st.st_mode):
            return  # directories stay 0755
        kind = target_of(st).kind  # a FIFO or a device is refused (not_a_file) before anything opens it
        refusal = decide_names(Op.WRITE, path, core.rows, want_exec=want_exec, role=ROLE)
        if refusal is None and prefix_of(path, core.rows.append_only, core.rows.casefold_dirs) is not None:
            refusal = refuse(403, "append_only", f"{path} is in append_only: its mode stays", "append to it instead")
        if refusal is not None:
            raise core.refused(call, refusal)
        staged = core.staged.get(node.ino)
        new_mode = 0o755 if want_exec else 0o644

        def act() -> None:
            if isinstance(staged, StagedFile):
                staged.want_exec = want_exec
                os.fchmod(staged.temp_fd, new_mode)
                return
            fd = core.open_node(path)
            try:
                os.fchmod(fd, new_mode)
            finally:
                os.close(fd)

        core.settle(call, Facts(target=Target(kind), real_path=path), act, extra={"change": "mode"})




def _invalidate(ino: int) -> None:
    with contextlib.suppress(OSError):  # the kernel holds nothing of it
        pyfuse3.invalidate_inode(ino)


