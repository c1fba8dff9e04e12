"""Hostile use of the workspace mount: what an agent tricked into misusing plain file calls would try. Each attack
runs as the app's uid through a real mount served by the fs door's FUSE front (tests/doors/fs/_mount.py), and
each checks the disk afterwards, not only the errno."""

from __future__ import annotations

import ctypes
import errno
import functools
import mmap
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from doors.fs._fuse_core import handle_cap
from tests.doors.fs._mount import OWNER, Mounted, deadlock_guard, http_request, mounted, needs_mount

pytestmark = [pytest.mark.root, needs_mount]

ROWS = {"read_only": [".git"], "append_only": ["log"], "exec": ["bin"], "hidden": [".env"], "max_files": 20_000,
        "max_file_bytes": 1 << 20}
KEY = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"
_libc = ctypes.CDLL(None, use_errno=True)


def _tree(root: str) -> None:
    os.makedirs(f"{root}/.git")
    os.makedirs(f"{root}/bin")
    Path(f"{root}/.git/HEAD").write_text("ref: main\n")
    Path(f"{root}/log").write_text("start\n")
    Path(f"{root}/notes.md").write_text("a" * 8192)
    Path(f"{root}/.env").write_text("TOKEN=x\n")


def _errno(act: object) -> int:
    try:
        act()  # type: ignore[operator]
    except OSError as exc:
        return exc.errno or -1
    return 0


def test_rename_over_a_read_only_file_is_refused_and_it_stays() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> int:
            Path(f"{point}/evil").write_text("evil\n")
            return _errno(lambda: os.rename(f"{point}/evil", f"{point}/.git/HEAD"))

        assert mount.run(attack) == errno.EACCES
        assert Path(f"{mount.workspace}/.git/HEAD").read_text() == "ref: main\n"
        assert mount.run(lambda p: _errno(lambda: os.rename(f"{p}/.git", f"{p}/git-moved"))) == errno.EACCES
        assert mount.run(lambda p: _errno(lambda: os.rename(f"{p}/log", f"{p}/log.old"))) == errno.EPERM


def test_hard_links_symlinks_and_devices_are_not_made() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> list[int]:
            return [_errno(lambda: os.link(f"{point}/.git/HEAD", f"{point}/head-link")),
                    _errno(lambda: os.symlink("/etc/shadow", f"{point}/shadow")),
                    _errno(lambda: os.mkfifo(f"{point}/fifo"))]

        assert mount.run(attack) == [errno.EPERM] * 3
        assert sorted(os.listdir(mount.workspace)) == [".env", ".git", "bin", "log", "notes.md"]
        rows = {(event["path"], event["row"]) for event in mount.events() if event["decision"] == "refuse"}
        assert {("head-link", "file_kinds"), ("shadow", "file_kinds"), ("fifo", "file_kinds")} <= rows


def test_o_trunc_on_append_only_is_refused_and_appends_are_whole() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> list[int]:
            trunc = _errno(lambda: os.close(os.open(f"{point}/log", os.O_WRONLY | os.O_TRUNC)))
            overwrite = _errno(lambda: os.close(os.open(f"{point}/log", os.O_WRONLY)))
            truncate = _errno(lambda: os.truncate(f"{point}/log", 0))
            fd = os.open(f"{point}/log", os.O_WRONLY | os.O_APPEND)
            os.pwrite(fd, b"appended\n", 0)  # an offset means nothing to an append
            shrink = _errno(lambda: os.ftruncate(fd, 1))
            os.close(fd)
            return [trunc, overwrite, truncate, shrink]

        assert mount.run(attack) == [errno.EPERM] * 4
        assert Path(f"{mount.workspace}/log").read_text() == "start\nappended\n"


def test_fallocate_cannot_grow_a_file_past_the_rows() -> None:
    with mounted({**ROWS, "max_file_bytes": 4096}, _tree) as mount:
        def attack(point: str) -> tuple[int, int]:
            fd = os.open(f"{point}/new.bin", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                raw = _libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(1 << 20))
                raw_errno = ctypes.get_errno() if raw != 0 else 0
                # glibc's posix_fallocate writes zeros where fallocate is not offered: the writes meet the rows.
                return raw_errno, _errno(lambda: os.posix_fallocate(fd, 0, 1 << 20))
            finally:
                os.close(fd)

        assert mount.run(attack) == (errno.EOPNOTSUPP, errno.EFBIG)
        assert os.stat(f"{mount.workspace}/new.bin").st_size <= 4096


def test_mmap_writes_are_staged_and_judged_like_any_write() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> tuple[int, int, bytes]:
            fd = os.open(f"{point}/notes.md", os.O_RDWR)
            mapped = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            mapped[:len(KEY)] = KEY
            synced = _errno(mapped.flush)  # msync: the pages are written back, then fsync commits (refused)
            mapped.close()
            closed = _errno(lambda: os.close(fd))
            with open(f"{point}/notes.md", "rb") as again:
                return synced, closed, again.read(len(KEY))

        synced, closed, seen = mount.run(attack)
        assert (synced, closed) == (errno.EACCES, 0)
        assert Path(f"{mount.workspace}/notes.md").read_bytes() == b"a" * 8192
        assert seen == b"a" * len(KEY)  # the kernel forgot the refused pages
        assert any(event["row"] == "refuse_secrets" and event["path"] == "notes.md" for event in mount.events())


def test_chmod_plus_x_only_inside_exec_and_never_setuid() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> list[int]:
            Path(f"{point}/run.sh").write_text("#!/bin/sh\n")
            Path(f"{point}/bin/tool").write_text("#!/bin/sh\n")
            return [_errno(lambda: os.chmod(f"{point}/run.sh", 0o755)),
                    _errno(lambda: os.chmod(f"{point}/bin/tool", 0o4755))]

        assert mount.run(attack) == [errno.EPERM, 0]
        assert os.stat(f"{mount.workspace}/run.sh").st_mode & 0o7777 == 0o644
        assert os.stat(f"{mount.workspace}/bin/tool").st_mode & 0o7777 == 0o755  # setuid dropped


def test_xattrs_are_not_kept() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> list[int]:
            return [_errno(lambda: os.setxattr(f"{point}/notes.md", "user.x", b"1")),
                    _errno(lambda: os.setxattr(f"{point}/notes.md", "security.capability", b"\x01" * 20)),
                    _errno(lambda: os.getxattr(f"{point}/notes.md", "user.x"))]

        plain, capability, read = mount.run(attack)
        assert (plain, read) == (errno.ENOTSUP, errno.ENOTSUP)
        assert capability in (errno.ENOTSUP, errno.EINVAL)  # the kernel may refuse a malformed one first
        assert os.listxattr(f"{mount.workspace}/notes.md") == []


def test_a_writer_that_never_closes_shows_nothing_on_disk_and_holds_its_quota() -> None:
    with mounted({**ROWS, "max_total_bytes": 10_000}, _tree) as mount:
        backing = mount.workspace

        def attack(point: str) -> tuple[bool, int, bool]:
            held = os.open(f"{point}/held.txt", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(held, b"x" * 8000)
            visible = os.path.exists(f"{backing}/held.txt")
            # Bytes staged and not yet committed count: a second writer cannot take them too.
            other = _errno(lambda: Path(f"{point}/other.txt").write_bytes(b"y" * 4000))
            return visible, other, os.path.exists(f"{point}/held.txt")

        visible, other, seen_by_app = mount.run(attack)  # the child exits without closing: release commits
        assert visible is False and seen_by_app is True
        assert other == errno.EDQUOT
        assert Path(f"{backing}/held.txt").read_bytes() == b"x" * 8000


def test_ten_thousand_files_in_one_directory() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> tuple[int, int]:
            os.mkdir(f"{point}/many")
            for number in range(10_000):
                with open(f"{point}/many/f{number:05d}", "wb") as out:
                    out.write(b"%d\n" % number)
            return len(os.listdir(f"{point}/many")), _errno(lambda: open(f"{point}/many/over", "w").close())

        listed, over = mount.run(attack)
        assert listed == 10_000 and over == 0
        assert len(os.listdir(f"{mount.workspace}/many")) == 10_001
    with mounted({**ROWS, "max_files": 3}, _tree) as mount:
        def capped(point: str) -> list[int]:
            return [_errno(lambda number=number: open(f"{point}/c{number}", "w").close()) for number in range(5)]

        assert mount.run(capped) == [0, 0, 0, errno.ENOSPC, errno.ENOSPC]


def test_a_path_of_4096_bytes_is_refused_as_too_long() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> tuple[int, int]:
            os.chdir(point)
            name, depth = "d" * 200, 0
            code = 0
            while code == 0 and depth < 30:  # 20 levels of 201 bytes pass 4096 in the workspace
                code = _errno(lambda: os.mkdir(name))
                if code == 0:
                    os.chdir(name)
                    depth += 1
            return depth, code

        depth, code = mount.run(attack)
        assert code == errno.ENAMETOOLONG and depth == 4096 // 201


def test_the_app_cannot_unmount_or_cover_the_mount() -> None:
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> list[int]:
            def umount() -> None:
                if _libc.umount2(point.encode(), 2) != 0:
                    raise OSError(ctypes.get_errno(), "umount2")

            def cover() -> None:
                if _libc.mount(b"tmpfs", point.encode(), b"tmpfs", 0, None) != 0:
                    raise OSError(ctypes.get_errno(), "mount")

            return [_errno(umount), _errno(cover)]

        assert mount.run(attack) == [errno.EPERM, errno.EPERM]


def test_a_door_killed_mid_write_fails_the_app_at_once() -> None:
    with mounted(ROWS, _tree) as mount:
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            def app(point: str) -> None:
                fd = os.open(f"{point}/half.bin", os.O_WRONLY | os.O_CREAT, 0o644)
                os.write(fd, b"x" * 1000)
                os.write(ready_w, b"r")
                os.read(go_r, 1)
                codes = [_errno(lambda: os.write(fd, b"y" * 1000)), _errno(lambda: os.close(fd)),
                         _errno(lambda: os.stat(point + "/log"))]
                os.write(result_w, repr(codes).encode())

            try:
                mount._as_app(app, uid=0x7FFE_0A02)
            finally:
                os._exit(0)
        os.read(ready_r, 1)
        mount.kill_door()
        os.write(go_w, b"g")
        codes = eval(os.read(result_r, 200).decode())
        os.waitpid(pid, 0)
        assert all(code in (errno.ECONNABORTED, errno.ENOTCONN) for code in codes), codes
        assert not os.path.exists(f"{mount.workspace}/half.bin")


def test_an_app_blocked_on_a_hung_door_can_be_killed() -> None:
    with mounted(ROWS, _tree) as mount:
        os.kill(mount.door_pid, signal.SIGSTOP)
        pid = os.fork()
        if pid == 0:
            try:
                mount._as_app(lambda point: os.stat(point + "/notes.md"), uid=0x7FFE_0A02)
            finally:
                os._exit(0)
        # No timing threshold: the app is blocked or about to be; either way SIGKILL must end it.
        time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.kill(mount.door_pid, signal.SIGCONT)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_large_append_lands_whole_and_is_counted_once() -> None:
    """Past 1 MiB an append's staged bytes spill to an unnamed file; max_file_bytes counts the file as it will be."""
    with mounted({**ROWS, "max_file_bytes": 3 << 20}, _tree) as mount:
        def attack(point: str) -> tuple[int, int]:
            with open(f"{point}/log", "ab") as out:
                for _ in range(40):
                    out.write(b"z" * 65536)  # 2.5 MiB in all
            def more() -> None:
                with open(f"{point}/log", "ab") as again:
                    again.write(b"y" * (1 << 20))

            over = _errno(more)
            return os.stat(f"{point}/log").st_size, over

        size, over = mount.run(attack)
        assert over == errno.EFBIG and 6 + 40 * 65536 <= size <= 3 << 20  # a write is cut at the limit, as by a rlimit
        landed = Path(f"{mount.workspace}/log").read_bytes()
        assert landed.startswith(b"start\n" + b"z" * (40 * 65536)) and set(landed[6 + 40 * 65536:]) <= {ord("y")}
        assert len(landed) == size


def _special_files(root: str) -> None:
    _tree(root)
    os.mkfifo(f"{root}/pipe")
    os.mknod(f"{root}/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def test_a_fifo_or_device_in_the_workspace_cannot_hang_or_reach_the_door() -> None:
    """A FIFO the person's tree holds: the app's kernel opens it locally (a FUSE special file), but touch and chmod
    come to the door, whose open of it would wait for a writer with every request of the door behind it (HTTP
    too) and the app in D. Refused before any open (not_a_file), the door answers the next call."""
    with mounted(ROWS, _special_files) as mount:
        def attack(point: str) -> list[int | bytes]:
            outcomes: list[int | bytes] = []
            for special in (f"{point}/pipe", f"{point}/null"):
                outcomes += [_errno(functools.partial(os.utime, special)),
                             _errno(functools.partial(os.chmod, special, 0o644)),
                             _errno(functools.partial(os.truncate, special, 0))]
            outcomes.append(Path(f"{point}/log").read_bytes())  # the door still answers
            return outcomes

        with deadlock_guard(mount.mount_fd) as fired:
            outcomes = mount.run(attack)
        assert not fired, "the door hung on a special file: its connection had to be aborted"
        assert outcomes == [errno.EISDIR, errno.EISDIR, errno.EINVAL] * 2 + [b"start\n"]
        refused = {(event["path"], event["row"]) for event in mount.events() if event["decision"] == "refuse"}
        assert {("pipe", "not_a_file"), ("null", "not_a_file")} <= refused
        assert stat.S_ISFIFO(os.lstat(f"{mount.workspace}/pipe").st_mode)


def test_a_file_swapped_for_a_fifo_behind_the_kernels_cache_cannot_hang_the_door() -> None:
    """The app's kernel still holds `swap` as a regular file (its 1 s attribute cache) when the host puts a FIFO
    there: the open comes to the door, which opens without blocking and refuses what it found."""
    with mounted(ROWS, _tree) as mount:
        Path(f"{mount.workspace}/swap").write_text("a file\n")
        os.chown(f"{mount.workspace}/swap", OWNER, OWNER)
        assert mount.run(lambda point: stat.S_ISREG(os.stat(f"{point}/swap").st_mode))
        os.unlink(f"{mount.workspace}/swap")
        os.mkfifo(f"{mount.workspace}/swap")
        with deadlock_guard(mount.mount_fd) as fired:
            opened = mount.run(lambda point: _errno(lambda: os.close(os.open(f"{point}/swap",
                                                                             os.O_RDONLY | os.O_NONBLOCK))))
            after = mount.run(lambda point: Path(f"{point}/log").read_bytes())
        assert not fired, "the door hung opening a FIFO: its connection had to be aborted"
        refused = {(event["path"], event["row"]) for event in mount.events() if event["decision"] == "refuse"}
        if ("swap", "not_a_file") not in refused:
            pytest.skip("the app's kernel looked `swap` up again (its cache outlived): the open never came to the door")
        assert opened == errno.EISDIR and after == b"start\n"


def test_a_mount_write_racing_an_http_write_of_one_path_cannot_stop_the_door() -> None:
    """The HTTP API commits in a worker thread under the path's lock and queues its audit event through the door's
    trio thread; a mount commit of the same path in that thread used to wait for the lock, so neither could go on:
    every request of the door, the mount's and the HTTP API's, stopped (a few rounds sufficed). The mount now waits
    for a held lock in a worker thread of its own."""
    with mounted(ROWS, _tree, http=True) as mount:
        def attack(point: str) -> tuple[list[int], int]:
            writer = os.fork()
            if writer == 0:
                code = 0
                try:
                    for _ in range(200):
                        http_request(mount.http_socket, "PUT", "/v0/fs/files/raced", b"h" * 100)
                except OSError:
                    code = 1
                os._exit(code)
            codes = [_errno(lambda: Path(f"{point}/raced").write_bytes(b"m" * 100)) for _ in range(200)]
            if any(codes):
                os.kill(writer, signal.SIGKILL)  # the door is stuck: its HTTP answer will never come
            _, status = os.waitpid(writer, 0)
            return codes, status

        with deadlock_guard(mount.mount_fd) as fired:
            codes, status = mount.run(attack)
        assert not fired, "the door deadlocked: its mount connection had to be aborted"
        assert codes == [0] * 200 and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert Path(f"{mount.workspace}/raced").read_bytes() in (b"h" * 100, b"m" * 100)
        writes = [event for event in mount.events() if event["op"] == "write" and event["path"] == "raced"]
        assert len(writes) == 400 and all(event["decision"] == "allow" for event in writes)


def _door_fds(mount: Mounted) -> int:
    return len(os.listdir(f"/proc/{mount.door_pid}/fd"))


def test_writes_committed_again_and_again_through_one_handle_hold_no_fds_in_the_door() -> None:
    """Each fsync of a handle commits its staged file, and the next write stages a fresh copy: the door used to
    keep the committed one's fd until the handle closed, one fd a commit, so one open file and a loop of
    pwrite+fsync (4 096 rounds: the door's RLIMIT_NOFILE) left the door no fd for any request of anyone's."""
    with mounted(ROWS, _tree) as mount:
        ready_r, ready_w = os.pipe()
        done_r, done_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            def app(point: str) -> None:
                fd = os.open(f"{point}/notes.md", os.O_RDWR)
                for round_ in range(500):
                    os.pwrite(fd, b"%03d" % round_, 0)
                    os.fsync(fd)
                os.write(ready_w, b"r")
                os.read(done_r, 1)  # the handle stays open while the door's fds are counted
                os.close(fd)

            try:
                mount._as_app(app, uid=0x7FFE_0A02)
            finally:
                os._exit(0)
        before = _door_fds(mount)
        os.read(ready_r, 1)
        held = _door_fds(mount)
        os.write(done_w, b"d")
        os.waitpid(pid, 0)
        assert held - before < 10, f"the door holds {held - before} more fds for one open file"
        assert Path(f"{mount.workspace}/notes.md").read_bytes() == b"499" + b"a" * 8189


def test_copies_staged_for_opens_of_a_large_file_count_against_max_total_bytes() -> None:
    """An open for writing without O_TRUNC stages a copy of the whole file on the disk. Those copies used to count
    for nothing until a write: opens of a 256 KiB file for reading and writing, held and never written, took
    256 KiB of disk each whatever max_total_bytes said (of a 64 MiB file, 512 MiB for eight opens under a 1 MiB
    max_total_bytes). Each copy is reserved now: the fifth open here is EDQUOT, and closing gives it all back."""
    def big_tree(root: str) -> None:
        _tree(root)
        Path(f"{root}/big").write_bytes(b"b" * (256 << 10))

    with mounted({**ROWS, "max_total_bytes": 1 << 20}, big_tree) as mount:
        def attack(point: str) -> tuple[list[int], int]:
            held: list[int] = []

            def hold() -> None:
                held.append(os.open(f"{point}/big", os.O_RDWR))

            codes = [_errno(hold) for _ in range(8)]
            for fd in held:
                os.close(fd)
            with open(f"{point}/big", "r+b") as again:  # every reservation was given back at close
                again.write(b"c")
            return codes, len(held)

        codes, held = mount.run(attack)
        assert codes == [0] * 4 + [errno.EDQUOT] * 4 and held == 4
        assert Path(f"{mount.workspace}/big").read_bytes() == b"c" + b"b" * ((256 << 10) - 1)
        refused = [event for event in mount.events() if event["decision"] == "refuse"]
        assert [(event["path"], event["row"]) for event in refused] == [("big", "max_total_bytes")] * 4


def test_a_read_of_a_file_another_handle_is_writing_is_audited() -> None:
    """A read open of a file another handle has staged reads the staged bytes; it was neither judged nor audited."""
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> bytes:
            with open(f"{point}/notes.md", "r+b") as writer:
                writer.write(b"STAGED")
                writer.flush()
                with open(f"{point}/notes.md", "rb") as reader:
                    return reader.read(6)

        assert mount.run(attack) == b"STAGED"
        ops = [(event["op"], event["path"]) for event in mount.events()]
        assert ops == [("read", "notes.md"), ("write", "notes.md")]


def test_truncate_by_path_beside_an_appending_handle_is_judged_as_its_own_write() -> None:
    """truncate(2) of a file another handle has open with O_APPEND took that handle's staging, which cannot shrink:
    refused (EPERM) and audited under append_only, a row that does not name the file. It is a write of its own."""
    with mounted(ROWS, _tree) as mount:
        def attack(point: str) -> int:
            appender = os.open(f"{point}/notes.md", os.O_WRONLY | os.O_APPEND)
            try:
                return _errno(lambda: os.truncate(f"{point}/notes.md", 10))
            finally:
                os.write(appender, b"+")
                os.close(appender)

        assert mount.run(attack) == 0
        assert Path(f"{mount.workspace}/notes.md").read_bytes() == b"a" * 10 + b"+"
        assert not [event for event in mount.events() if event["decision"] == "refuse"]


def test_open_handles_are_capped_below_the_doors_fds() -> None:
    """Held opens (an app of 32 processes may hold 32 × 1 024 fds) would run the door out of its own fds, after
    which it answers nothing, its HTTP API included: past its cap an open is refused ENFILE (row `handles`),
    named in the audit, and the door still answers."""
    fd_limit = 256
    cap = handle_cap(fd_limit)
    with mounted(ROWS, _tree, fd_limit=fd_limit) as mount:
        def attack(point: str) -> tuple[int, int, int, bytes]:
            held = [os.open(f"{point}/notes.md", os.O_RDONLY) for _ in range(cap)]
            past = [_errno(lambda: os.close(os.open(f"{point}/notes.md", os.O_RDONLY))),
                    _errno(lambda: os.close(os.open(f"{point}/new.txt", os.O_WRONLY | os.O_CREAT, 0o644))),
                    _errno(lambda: os.close(os.open(point, os.O_RDONLY | os.O_DIRECTORY)))]
            os.close(held.pop())
            after = Path(f"{point}/log").read_bytes()  # one handle free again: answered
            for fd in held:
                os.close(fd)
            return past[0], past[1], past[2], after

        assert mount.run(attack) == (errno.ENFILE, errno.ENFILE, errno.ENFILE, b"start\n")
        rows = [event["row"] for event in mount.events() if event["decision"] == "refuse"]
        assert rows.count("handles") == 3
        assert not os.path.exists(f"{mount.workspace}/new.txt")
