"""The shell's overlay of the workspace (launcher/kernel/overlay.py), mounted in a real private root, as root.

The child builds the root as the launcher does for the shell (the workspace kept read-only, the overlay over
it), drops to the shell's ids and acts as a command would; the door's reader (doors/shell/_upper.py) then reads
the upper layer it left. What the host sees afterwards is checked here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_child import run_child

from doors.shell._changes import change_list
from doors.shell._upper import OPAQUE_XATTR, read_entries
from launcher.kernel.mountns import Bind, enter_private_root
from launcher.kernel.overlay import OverlayMount, layer_options, tmpfs_options

SHELL, OWNER = 65533, 65532
TRUE = Path("/usr/bin/true").read_bytes()


def test_the_layer_options_keep_the_upper_layer_plain_for_an_unprivileged_reader() -> None:
    options = layer_options("/tmp/.overlay").split(",")
    assert options[:3] == ["lowerdir=/tmp/.overlay/lower", "upperdir=/tmp/.overlay/upper",
                           "workdir=/tmp/.overlay/work"]
    assert {"userxattr", "redirect_dir=nofollow", "metacopy=off", "index=off", "xino=off"} <= set(options)
    overlay = OverlayMount("/w", "/r/shell/upper", 4 << 20, 1024, 7, 8, 9, 10)
    assert tmpfs_options(overlay) == "size=4194304,nr_inodes=1024,mode=0700,uid=7,gid=8"


@contextlib.contextmanager
def _workspace() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="sh-test-ovl-", dir="/tmp"))
    try:
        base.chmod(0o755)
        ws = base / "ws"
        (ws / "lib").mkdir(parents=True)
        (ws / "old").mkdir()
        (ws / "a.txt").write_text("lower\n")
        (ws / "lib" / "m.py").write_text("x = 1\n")
        (ws / "old" / "x").write_text("x\n")
        for path in (ws, ws / "lib", ws / "old", ws / "a.txt", ws / "lib" / "m.py", ws / "old" / "x"):
            os.chown(path, OWNER, OWNER)
        (base / "shell" / "upper").mkdir(parents=True)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _errno(action: object) -> str:
    try:
        action()  # type: ignore[operator]
    except OSError as exc:
        return errno.errorcode[exc.errno or 0]
    return "ok"


def _ran(program: Path) -> str:
    """"ran" when `program` executed (and exited 0), else the errno execve gave."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.execv(str(program), [str(program)])
        except OSError as exc:
            os._exit(exc.errno or 1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return "ran" if code == 0 else errno.errorcode.get(code, str(code))


def _as_a_command(ws: Path, upper: Path) -> dict[str, object]:
    """What a command of the shell does and sees in the overlay (run as the shell's ids)."""
    seen: dict[str, object] = {"owner": os.stat(ws / "a.txt").st_uid, "root_owner": os.stat(ws).st_uid}
    (ws / "a.txt").write_text("upper\n")
    (ws / "new").mkdir()
    (ws / "new" / "n.txt").write_text("n\n")
    os.rename(ws / "lib" / "m.py", ws / "lib" / "renamed.py")
    shutil.rmtree(ws / "old")
    (ws / "old").mkdir()
    (ws / "old" / "y").write_text("y\n")
    (ws / "t").write_bytes(TRUE)
    os.chmod(ws / "t", 0o755)
    seen["exec"] = _ran(ws / "t")
    seen["dir_rename"] = _errno(lambda: os.rename(ws / "lib", ws / "lib2"))  # a lower directory
    seen["upper_write"] = _errno(lambda: (upper / "forged").write_text("x"))
    whiteout = os.lstat(upper / "lib" / "m.py")
    seen["whiteout"] = [stat.S_ISCHR(whiteout.st_mode), whiteout.st_rdev]
    seen["opaque"] = os.getxattr(upper / "old", OPAQUE_XATTR).decode()
    root = os.open(upper, os.O_RDONLY | os.O_DIRECTORY)
    try:
        seen["changes"] = [[change.op, change.path] for change in change_list(read_entries(root))]
    finally:
        os.close(root)
    seen["mounts"] = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return seen


@pytest.mark.root
def test_commands_write_an_overlay_whose_upper_layer_the_door_reads_and_the_workspace_stays_as_it_was() -> None:
    with _workspace() as base:
        ws, upper = base / "ws", base / "shell" / "upper"
        overlay = OverlayMount(str(ws), str(upper), 4 << 20, 256, SHELL, SHELL, OWNER, OWNER)

        def setup(_wfd: int) -> None:
            # /usr: the loader and libc, so that only the overlay's noexec stands between a command and its file.
            enter_private_root((Bind("/usr"), Bind(str(ws)), Bind(str(base / "shell"))), overlay=overlay)
            os.setgroups([])
            os.setresgid(SHELL, SHELL, SHELL)
            os.setresuid(SHELL, SHELL, SHELL)

        seen = run_child(setup, lambda: _as_a_command(ws, upper)).report["value"]
        # The owner's files are the shell's in the overlay (idmapped lower layer), so it may write them.
        assert seen["owner"] == SHELL and seen["root_owner"] == SHELL
        assert seen["exec"] == "EACCES"  # noexec: nothing written there runs
        assert seen["dir_rename"] == "EXDEV"  # redirect_dir=nofollow: mv copies instead
        assert seen["upper_write"] == "EROFS"  # the door's view of the upper layer is read-only
        assert seen["whiteout"] == [True, 0] and seen["opaque"] == "y"
        assert seen["changes"] == [
            ["write", "a.txt"], ["write", "t"], ["mkdir", "lib"], ["delete", "lib/m.py"], ["write", "lib/renamed.py"],
            ["mkdir", "new"], ["write", "new/n.txt"], ["replace_dir", "old"], ["write", "old/y"]]
        # The workspace's read-only bind (the lower layer's source), and on it the overlay, noexec.
        at_workspace = [(line[5], line[line.index("-") + 1]) for line in seen["mounts"] if line[4] == str(ws)]
        assert len(at_workspace) == 2 and "ro" in at_workspace[0][0].split(",")
        assert at_workspace[1][1] == "overlay" and "noexec" in at_workspace[1][0].split(",")
        assert not [line for line in seen["mounts"] if ".overlay" in line[4]]  # the stage is gone
        # The host: the workspace as it was, owned as it was; the mount point empty; no mount left.
        assert (ws / "a.txt").read_text() == "lower\n" and sorted(os.listdir(ws)) == ["a.txt", "lib", "old"]
        assert os.listdir(ws / "lib") == ["m.py"] and os.listdir(ws / "old") == ["x"]
        assert os.stat(ws / "a.txt").st_uid == OWNER and os.listdir(upper) == []
        assert str(base) not in Path("/proc/self/mountinfo").read_text()
