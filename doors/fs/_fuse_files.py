"""Files open through the mount: a read handle on the disk's file, or a write staged beside it and committed
through the one dispatch when the app closes (flush), fsyncs, or lets go of it (release).

A write never touches the target until its commit: the bytes go to an unnamed O_TMPFILE in the target's
directory (a copy of the file unless it was opened with O_TRUNC or created), counted against max_file_bytes and
max_total_bytes as they arrive. The commit scans the whole staged file for keys and kept secrets, decides, queues
the audit event and only then renames it over the target (no fsync: a close on a local file system promises
none; an fsync from the app fsyncs). An append is staged as its new bytes only and appended whole at the commit,
under the path's lock, after the file's own tail was scanned with them. A refused commit leaves the disk as it
was, and the app's close() (or fsync()) returns the row's errno.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from typing import Any

from doors._refusal import Refusal
from doors.fs._decide import file_mode
from doors.fs._dispatch import Call, Upload
from doors.fs._fuse_core import ROLE, MountCore, fail
from doors.fs._fuse_nodes import Node
from doors.fs._ops import PathBusy, target_of
from doors.fs._paths import WorkspacePath
from doors.fs._rules import Facts, Op, refuse
from doors.fs._secrets import CARRY, KEPT_CARRY, SecretScanner
from doors.fs._spool import Spool

SCAN_PIECE = 1024 * 1024


@dataclass
class ReadHandle:
    """A file opened for reading only: the disk's file, as it was when opened."""

    node: Node
    fd: int

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class DirHandle:
    """A directory being listed: its names when it was opened, and an fd to stat them from."""

    node: Node
    fd: int
    names: list[str]

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class StagedFile:
    """A file opened for writing (not appending): its next content, staged in an unnamed file."""

    node: Node
    temp_fd: int
    upload: Upload
    want_exec: bool
    opened: str  # "create", "truncate" or "write": how the app opened it (for the audit event)
    dirty: bool = False
    committed: bool = False  # the staged file became the target: the next write stages a fresh copy
    writes: int = 0

    def stat(self) -> os.stat_result:
        return os.fstat(self.temp_fd)

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self.temp_fd, size, offset)

    def close(self) -> None:
        os.close(self.temp_fd)
        self.upload.close()


@dataclass(frozen=True)
class StagedStat:
    """The attributes of a file whose bytes are partly staged (what MountCore.attrs reads of a stat)."""

    st_mode: int
    st_nlink: int
    st_size: int
    st_blksize: int
    st_blocks: int
    st_atime_ns: int
    st_mtime_ns: int
    st_ctime_ns: int


@dataclass
class StagedAppend:
    """A file opened with O_APPEND: the bytes to add, whatever the offsets the kernel names."""

    node: Node
    spool: Spool
    upload: Upload
    read_fd: int  # the disk's file as opened (-1: it did not exist), for reads on an O_RDWR handle
    opened: str
    dir_fd: int = -1  # an O_PATH fd of its directory: where a spool past 1 MiB spills (unnamed)
    dirty: bool = False
    writes: int = 0

    def stat(self) -> Any:
        """The file as the app sees it: the disk's, grown by the bytes staged (a new file: those alone)."""
        if self.read_fd >= 0:
            base = os.fstat(self.read_fd)
            return StagedStat(base.st_mode, base.st_nlink, base.st_size + self.spool.size, base.st_blksize,
                              base.st_blocks, base.st_atime_ns, base.st_mtime_ns, base.st_ctime_ns)
        now = time.time_ns()
        return StagedStat(stat.S_IFREG | 0o644, 1, self.spool.size, 4096, 0, now, now, now)

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self.read_fd, size, offset) if self.read_fd >= 0 else b""

    def close(self) -> None:
        self.spool.close()
        for fd in (self.read_fd, self.dir_fd):
            if fd >= 0:
                os.close(fd)
        self.upload.close()


def stage_append(core: MountCore, node: Node, path: WorkspacePath, read_fd: int, opened: str) -> StagedAppend:
    """A staged append of `path`: its new bytes, in memory, then in an unnamed file in its directory."""
    dir_fd = core.parent_fd(Call(Op.APPEND, path, ROLE), path)
    return StagedAppend(node, Spool(dir_fd), core.dispatch.meter.reservation(core.rows, ROLE), read_fd, opened,
                        dir_fd)


def stage_file(core: MountCore, node: Node, path: WorkspacePath, *, copy_from: int, want_exec: bool,
               opened: str, was_executable: bool = False, parent_fd: int = -1) -> StagedFile:
    """A staged write of `path`: an unnamed file beside it holding a copy of `copy_from` (-1: empty); in
    `parent_fd` (the caller's O_PATH fd of its directory, left open) when given, else through a walk of its own.
    The copy's bytes are reserved against max_total_bytes first, as the bytes written are (the commit counts the
    whole file): copies of a large file, opened for writing again and again and never written, would take the
    disk no row bounds (EDQUOT)."""
    call = Call(Op.WRITE, path, ROLE)
    upload = core.dispatch.meter.reservation(core.rows, ROLE)
    size = os.fstat(copy_from).st_size if copy_from >= 0 else 0
    refusal = upload.take(size) if size else None
    if refusal is not None:
        raise core.refused(call, refusal, byte_count=size)
    try:
        directory = parent_fd if parent_fd >= 0 else core.parent_fd(call, path)
        try:
            # Readable: the commit scans it, and reads on an O_RDWR handle come from it.
            temp_fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600, dir_fd=directory)
        except OSError as err:
            raise core.kernel_failed(call, err) from None
        finally:
            if directory != parent_fd:
                os.close(directory)
        try:
            os.fchmod(temp_fd, file_mode(path, core.rows, want_exec, was_executable))
            _copy_all(copy_from, temp_fd, size)
        except BaseException:
            os.close(temp_fd)
            raise
    except BaseException:
        upload.close()
        raise
    return StagedFile(node, temp_fd, upload, want_exec, opened)


def _copy_all(source: int, dest: int, size: int) -> None:
    offset = 0
    while offset < size:
        copied = os.copy_file_range(source, dest, size - offset, offset, offset)
        if copied == 0:
            break
        offset += copied


def restage(core: MountCore, staged: StagedFile) -> None:
    """After a commit the staged file is the target: writes from now on go to a fresh copy of it."""
    path = core.path_of(staged.node.ino)
    fresh = stage_file(core, staged.node, path, copy_from=staged.temp_fd, want_exec=staged.want_exec,
                       opened=staged.opened)
    staged.upload.close()  # nothing held: a commit left it fresh, and write and truncate restage first
    os.close(staged.temp_fd)  # the target's now (readers opened their own): kept, one fd a commit, without bound
    staged.temp_fd, staged.upload, staged.committed = fresh.temp_fd, fresh.upload, False


def write(core: MountCore, handle: StagedFile | StagedAppend, offset: int, data: bytes) -> int:
    """Stage `data` at `offset` (an append: at the end), counted against the file and session limits. Once per
    FUSE write: the call judged is built only for a refusal."""
    path = core.path_of(handle.node.ino)  # ENOENT once the file has no name
    appending = isinstance(handle, StagedAppend)
    size = len(data)
    # An append lands at the end, whatever the offset (its stat holds the staged bytes already).
    end = (handle.stat().st_size if appending else offset) + size
    limit = core.rows.max_file_bytes
    if isinstance(handle, StagedFile) and handle.committed:  # first: the fresh copy takes this handle's reservation
        restage(core, handle)
    refusal = _too_big(end, limit) if end > limit else handle.upload.take(size)
    if refusal is not None:
        raise core.refused(Call(Op.APPEND if appending else Op.WRITE, path, ROLE), refusal, byte_count=size)
    if isinstance(handle, StagedAppend):
        handle.spool.add(data)
    else:
        written = os.pwrite(handle.temp_fd, data, offset)
        if written < size:  # short only on a full disk: the rest raises its errno
            _pwrite_all(handle.temp_fd, memoryview(data)[written:], offset + written)
    handle.dirty = True
    handle.writes += 1
    return size


def _too_big(size: int, limit: int) -> Refusal:
    return refuse(413, "max_file_bytes", f"the file would hold {size} bytes (max_file_bytes {limit})",
                  "write less, or raise doors.fs.max_file_bytes in the manifest")


def _pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def scan_staged(core: MountCore, fd: int, size: int) -> tuple[str | None, bytes]:
    """What the staged file holds that refuse_secrets refuses (None: nothing), and its last bytes."""
    scanner = SecretScanner(core.dispatch.recent.tail, core.rows.kept_secrets) if core.rows.refuse_secrets else None
    offset, tail = 0, b""
    while offset < size:
        piece = os.pread(fd, min(SCAN_PIECE, size - offset), offset)
        if not piece:
            break
        offset += len(piece)
        tail = (tail + piece[-KEPT_CARRY:])[-KEPT_CARRY:]
        if scanner is not None and scanner.feed(piece) is not None:
            break
    finding = scanner.finding if scanner is not None else None
    return (finding.kind if finding is not None else None), tail


def commit_file(core: MountCore, staged: StagedFile, closed: str) -> None:
    """Judge the staged file and, when allowed, rename it over its path (the node's path now)."""
    path = core.nodes.path(staged.node.ino)
    staged.dirty = False
    if path is None:  # unlinked (or replaced) while open: its writes go with it, as on any file system
        return
    staged_st = os.fstat(staged.temp_fd)
    size = staged_st.st_size
    secret, tail = scan_staged(core, staged.temp_fd, size)
    call = Call(Op.WRITE, path, ROLE)
    parent_fd = core.parent_fd(call, path)
    try:
        with core.workspace.lock(path, wait=False):
            target = core.workspace.stat_at(parent_fd, path.name)
            facts = Facts(target=target, real_path=path, body_bytes=size, secret=secret)
            mode = file_mode(path, core.rows, staged.want_exec, target.executable)

            def act() -> None:
                if target.exists or not _link_new(core, parent_fd, staged.temp_fd, path.name, mode, staged_st.st_mode):
                    core.workspace.commit_write(parent_fd, staged.temp_fd, "", path.name, mode, durable=False)
                core.dispatch.recent.add(tail)

            extra = {"opened": staged.opened, "closed": closed, "writes": staged.writes}
            core.settle(call, facts, act, staged.upload, extra)
    except PathBusy:
        staged.dirty = True  # not judged yet: MountCore.unblocked commits it again
        raise
    finally:
        os.close(parent_fd)
    staged.committed = True
    staged.upload = core.dispatch.meter.reservation(core.rows, ROLE)  # the last one became the call's
    core.nodes.committed(staged.node)


def _link_new(core: MountCore, parent_fd: int, temp_fd: int, name: str, mode: int, staged_mode: int) -> bool:
    """A new file: link the staged file at its name at once (one metadata change, not a link and a rename);
    False when something took the name meanwhile (the HTTP API): the caller replaces it as any commit does.
    A staged file that has its mode already (given when staged, or by a chmod since) and no owner to take keeps it
    without a second fchmod."""
    if core.workspace.chown_to is not None or stat.S_IMODE(staged_mode) != mode:
        core.workspace.own(temp_fd, mode)
    try:
        os.link(f"/proc/self/fd/{temp_fd}", name, dst_dir_fd=parent_fd, follow_symlinks=True)
    except FileExistsError:
        return False
    return True


def commit_append(core: MountCore, staged: StagedAppend, closed: str) -> None:
    """Scan the new bytes after the file's own tail and, when allowed, append them whole."""
    path = core.nodes.path(staged.node.ino)
    staged.dirty = False
    if path is None:
        return
    call = Call(Op.APPEND, path, ROLE)
    parent_fd = core.parent_fd(call, path)
    try:
        with core.workspace.lock(path, wait=False):
            _append_locked(core, staged, call, parent_fd, closed)
    except PathBusy:
        staged.dirty = True  # not judged yet: MountCore.unblocked commits it again
        raise
    finally:
        os.close(parent_fd)
    staged.spool.close()
    staged.spool = Spool(staged.dir_fd)
    staged.upload = core.dispatch.meter.reservation(core.rows, ROLE)
    core.nodes.committed(staged.node)


def _append_locked(core: MountCore, staged: StagedAppend, call: Call, parent_fd: int, closed: str) -> None:
    workspace, rows = core.workspace, core.rows
    target = workspace.stat_at(parent_fd, call.path.name)
    fd = workspace.open_append(parent_fd, call.path.name, create=False) if target.kind == "file" else -1
    try:
        if fd >= 0:
            target = target_of(os.fstat(fd))
        secret = None
        if rows.refuse_secrets:
            history = workspace.tail(fd, target.size, CARRY) if fd >= 0 else b""
            scanner = SecretScanner(history, rows.kept_secrets)
            for piece in staged.spool.pieces():
                if scanner.feed(bytes(piece)) is not None:
                    break
            secret = scanner.finding.kind if scanner.finding is not None else None
        facts = Facts(target=target, real_path=call.path, body_bytes=staged.spool.size, secret=secret)

        def act() -> None:
            out = fd if fd >= 0 else workspace.open_append(parent_fd, call.path.name, create=True)
            try:
                for piece in staged.spool.pieces():
                    workspace.write_all(out, piece)
            finally:
                if out != fd:
                    os.close(out)

        extra = {"opened": staged.opened, "closed": closed, "writes": staged.writes}
        core.settle(call, facts, act, staged.upload, extra)
    finally:
        if fd >= 0:
            os.close(fd)


def commit(core: MountCore, handle: object, closed: str) -> None:
    """Commit a write handle that holds uncommitted bytes; a read handle has nothing to commit."""
    if isinstance(handle, StagedFile) and handle.dirty:
        commit_file(core, handle, closed)
    elif isinstance(handle, StagedAppend) and handle.dirty:
        commit_append(core, handle, closed)


def truncate(core: MountCore, handle: StagedFile | StagedAppend, size: int) -> None:
    """ftruncate of a write handle: staged like a write (an append-only one may not shrink or grow this way)."""
    path = core.path_of(handle.node.ino)
    if isinstance(handle, StagedAppend):
        raise core.refused(Call(Op.WRITE, path, ROLE), refuse(403, "append_only", f"{path} is open for appending: "
                           "truncating it is refused", "append to it instead"))
    if size > core.rows.max_file_bytes:
        raise core.refused(Call(Op.WRITE, path, ROLE), _too_big(size, core.rows.max_file_bytes))
    if handle.committed:
        restage(core, handle)
    os.ftruncate(handle.temp_fd, size)
    handle.dirty = True


def ensure_writable(handle: object) -> StagedFile | StagedAppend:
    if not isinstance(handle, (StagedFile, StagedAppend)):
        raise fail(errno.EBADF)
    return handle
