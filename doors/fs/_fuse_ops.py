"""The mount's names: lookup, getattr, listing, mkdir, unlink, rmdir, rename, statfs, and what it refuses to
make (links, symlinks, devices, xattrs). Every change goes through the one dispatch (MountCore.settle).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import pyfuse3

from doors.fs._decide import DIR_MODE
from doors.fs._dispatch import Call
from doors.fs._fuse_core import ROLE, MountCore, fail, target_at
from doors.fs._fuse_files import DirHandle
from doors.fs._fuse_nodes import ROOT_INODE, Node
from doors.fs._openat2 import RENAME_NOREPLACE, renameat2
from doors.fs._paths import WorkspacePath, is_temp_name
from doors.fs._rules import Facts, Op, Target, is_hidden, refuse

Ctx = Any  # pyfuse3.RequestContext


class NameOps(pyfuse3.Operations):
    """Handlers that name things; doors/fs/_fuse_fileops.py adds those that open them."""

    enable_writeback_cache = False  # a refused write must never have reached the page cache as written

    def __init__(self, core: MountCore) -> None:
        super().__init__()
        self.core = core

    async def lookup(self, parent_inode: int, name: bytes, ctx: Ctx = None) -> pyfuse3.EntryAttributes:
        core = self.core
        if name == b"..":
            node = core.nodes.get(parent_inode)
            parent = node.parent if node is not None and node.parent is not None else ROOT_INODE
            return core.attrs(parent, core.stat_node(core.nodes.get(parent) or _missing()))
        path = core.child_path(parent_inode, name)
        if is_hidden(path, core.rows) or is_temp_name(path.name):
            raise fail(errno.ENOENT)
        node = core.nodes.child(parent_inode, path.name)
        if node is None or not node.pending:
            try:
                st = core.lstat(path)
            except OSError as err:
                raise fail(err.errno or errno.EIO) from None
            node = core.nodes.place(parent_inode, path.name, disk_ino=st.st_ino)
        else:
            st = core.stat_node(node)
        core.nodes.remember(node)
        return core.attrs(node.ino, st)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for ino, count in inode_list:
            self.core.nodes.forget(ino, count)

    async def getattr(self, inode: int, ctx: Ctx = None) -> pyfuse3.EntryAttributes:
        node = self.core.nodes.get(inode) or _missing()
        return self.core.attrs(inode, self.core.stat_node(node))

    async def readlink(self, inode: int, ctx: Ctx) -> bytes:
        core = self.core
        path = core.path_of(inode)
        if core.rows.no_symlinks:  # the app's kernel follows a link only by reading it: with no_symlinks, it cannot
            raise core.refused(Call(Op.READ, path, ROLE), refuse(
                403, "within_root", f"{path} is a symlink, and no_symlinks is set",
                "name the file itself, or set doors.fs.no_symlinks to false"))
        try:
            parent_fd = core.open_at(path.parent, os.O_PATH | os.O_DIRECTORY)
        except OSError as err:
            raise fail(err.errno or errno.EIO) from None
        try:
            return os.fsencode(os.readlink(path.name, dir_fd=parent_fd))
        except OSError as err:
            raise fail(err.errno or errno.EIO) from None
        finally:
            os.close(parent_fd)

    # -- listing --
    async def opendir(self, inode: int, ctx: Ctx) -> int:
        core = self.core
        node = core.nodes.get(inode) or _missing()
        path = core.path_of(inode)
        call = Call(Op.LIST, path, ROLE)
        core.room_for_handle(call)

        def act() -> DirHandle:
            fd = core.open_at(path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                names = [name for name in os.listdir(fd)
                         if not is_temp_name(name) and not is_hidden(path.child(name), core.rows)]
            except BaseException:
                os.close(fd)
                raise
            names = sorted({*names, *core.nodes.pending_in(inode)})
            return DirHandle(node, fd, names)

        handle = core.settle(call, Facts(target=Target("dir"), real_path=path), act)
        core.nodes.opened(node)
        return core.new_fh(handle)

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        core = self.core
        handle: DirHandle = core.handle(fh)
        for index in range(start_id, len(handle.names)):
            name = handle.names[index]
            node = core.nodes.child(handle.node.ino, name)
            try:
                if node is not None and node.pending:
                    st = core.stat_node(node)
                else:
                    st = os.stat(name, dir_fd=handle.fd, follow_symlinks=False)
            except OSError:
                continue  # gone since the listing was read
            made = node is None
            node = node or core.nodes.place(handle.node.ino, name, disk_ino=st.st_ino)
            if not pyfuse3.readdir_reply(token, os.fsencode(name), core.attrs(node.ino, st), index + 1):
                if made:
                    core.nodes.forget(node.ino, 0)
                return
            core.nodes.remember(node)

    async def releasedir(self, fh: int) -> None:
        handle: DirHandle = self.core.handles.pop(fh)
        handle.close()
        self.core.nodes.closed(handle.node)

    # -- changes --
    async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Ctx) -> pyfuse3.EntryAttributes:
        core = self.core
        path = core.child_path(parent_inode, name, Op.MKDIR)
        call = Call(Op.MKDIR, path, ROLE)
        parent_fd = core.parent_fd(call, path)
        try:
            target = core.workspace.stat_at(parent_fd, path.name)
            if target.exists:
                raise fail(errno.EEXIST)
            core.settle(call, Facts(target=target, real_path=path),
                        lambda: core.workspace.mkdir(parent_fd, path.name, DIR_MODE))
            st = os.stat(path.name, dir_fd=parent_fd, follow_symlinks=False)
        finally:
            os.close(parent_fd)
        node = core.nodes.place(parent_inode, path.name, disk_ino=st.st_ino)
        core.nodes.remember(node)
        return core.attrs(node.ino, st)

    async def unlink(self, parent_inode: int, name: bytes, ctx: Ctx) -> None:
        self._delete(parent_inode, name, is_dir=False)

    async def rmdir(self, parent_inode: int, name: bytes, ctx: Ctx) -> None:
        self._delete(parent_inode, name, is_dir=True)

    def _delete(self, parent_inode: int, name: bytes, is_dir: bool) -> None:
        core = self.core
        path = core.child_path(parent_inode, name, Op.DELETE)
        call = Call(Op.DELETE, path, ROLE)
        node = core.nodes.child(parent_inode, path.name)
        if node is not None and node.pending:  # created, never committed: nothing on the disk to remove
            core.settle(call, Facts(target=Target("file"), real_path=path), lambda: None)
            core.nodes.detach(node)
            return
        parent_fd = core.parent_fd(call, path)
        try:
            target = core.workspace.stat_at(parent_fd, path.name)
            core.settle(call, Facts(target=target, real_path=path),
                        lambda: core.workspace.delete(parent_fd, path.name, is_dir))
        finally:
            os.close(parent_fd)
        if node is not None:
            core.nodes.detach(node)

    async def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
                     flags: int, ctx: Ctx) -> None:
        core = self.core
        if flags & pyfuse3.RENAME_EXCHANGE:
            raise fail(errno.EINVAL)  # an exchange would put each file under the other's rows at once
        source = core.child_path(parent_inode_old, name_old, Op.RENAME)
        dest = core.child_path(parent_inode_new, name_new, Op.RENAME)
        call = Call(Op.RENAME, source, ROLE, dest=dest)
        node = core.nodes.child(parent_inode_old, source.name)
        noreplace = bool(flags & pyfuse3.RENAME_NOREPLACE)
        if node is not None and node.pending:
            dest_target = target_at(core, dest) if noreplace else None
            core.settle(call, Facts(target=Target("file"), real_path=source, dest_target=dest_target), lambda: None)
        else:
            await core.unblocked(lambda: self._rename_on_disk(call, source, dest, noreplace))
        core.nodes.move(parent_inode_old, source.name, parent_inode_new, dest.name)

    def _rename_on_disk(self, call: Call, source: WorkspacePath, dest: WorkspacePath, noreplace: bool) -> None:
        core = self.core
        src_fd = core.parent_fd(call, source)
        try:
            dst_fd = core.parent_fd(call, dest)
            try:
                first, second = sorted((source, dest))
                with core.workspace.lock(first, wait=False), \
                        core.workspace.lock(second, wait=False) if second != first else nullcontext():
                    target = core.workspace.stat_at(src_fd, source.name)
                    # Replacing is what rename(2) does (editors and git rename over files); with NOREPLACE the
                    # destination must not exist, as through the HTTP API.
                    dest_target = core.workspace.stat_at(dst_fd, dest.name) if noreplace else None
                    facts = Facts(target=target, real_path=source, dest_target=dest_target)
                    core.settle(call, facts, lambda: renameat2(src_fd, source.name, dst_fd, dest.name,
                                                               RENAME_NOREPLACE if noreplace else 0))
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)

    # -- what the mount does not make --
    def _no_kind(self, parent_inode: int, name: bytes, what: str) -> pyfuse3.FUSEError:
        core = self.core
        path = core.child_path(parent_inode, name, Op.WRITE)
        refusal = refuse(403, "file_kinds", f"{path}: the mount makes no {what}",
                         "write regular files and make directories; a link would give a file a second name "
                         "outside the path rows")
        return core.refused(Call(Op.WRITE, path, ROLE), refusal)

    async def link(self, inode: int, new_parent_inode: int, new_name: bytes, ctx: Ctx) -> pyfuse3.EntryAttributes:
        raise self._no_kind(new_parent_inode, new_name, "hard link")

    async def symlink(self, parent_inode: int, name: bytes, target: bytes, ctx: Ctx) -> pyfuse3.EntryAttributes:
        raise self._no_kind(parent_inode, name, "symlink")

    async def mknod(self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: Ctx) -> pyfuse3.EntryAttributes:
        raise self._no_kind(parent_inode, name, "device, FIFO or socket")

    # The door keeps no extended attributes (capabilities, ACLs, labels). ENOSYS tells the kernel once and for all:
    # it answers EOPNOTSUPP itself from then on, and stops asking for security.capability before every write.
    async def getxattr(self, inode: int, name: bytes, ctx: Ctx) -> bytes:
        raise fail(errno.ENOSYS)

    async def listxattr(self, inode: int, ctx: Ctx) -> Sequence[bytes]:
        raise fail(errno.ENOSYS)

    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: Ctx) -> None:
        raise fail(errno.ENOSYS)

    async def removexattr(self, inode: int, name: bytes, ctx: Ctx) -> None:
        raise fail(errno.ENOSYS)

    async def statfs(self, ctx: Ctx) -> pyfuse3.StatvfsData:
        info = os.fstatvfs(self.core.workspace.root_fd)
        data = pyfuse3.StatvfsData()
        for attr in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail",
                     "f_namemax"):
            setattr(data, attr, getattr(info, attr))
        return data


def _missing() -> Node:
    raise fail(errno.ENOENT)
