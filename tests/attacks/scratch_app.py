"""The scratch app: runs confined as the app and goes after its scratch space (HOME and TMPDIR, one tmpfs).

It judges nothing: each attempt prints one JSON line `{"probe": name, ...}`. Protocol with the test (one line
each way per step): `ready` (where HOME and TMPDIR are and what statvfs says), then on `fill` it writes in
TMPDIR until the size limit refuses and prints `filled`; on `inodes` it removes that file, creates empty files
in HOME until the inode limit refuses and prints `counted`; on `exec` it drops executables (one setuid) and
tries to run them and to make a device, and prints `dropped`; on `planted` it goes after what root planted in
its TMPDIR (a device node, a setuid-root program) and prints `done`, then exits 0. Standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

CHUNK = b"\x5a" * (1024 * 1024)
LOADER = "/lib64/ld-linux-x86-64.so.2"


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"scratch_app: expected {word!r} on stdin, got {line!r}")


def errno_name(number: int | None) -> str:
    return errno.errorcode.get(number or 0, str(number))


def where() -> None:
    """HOME and TMPDIR as the app sees them: one file system, its size and inode count, its mount lines."""
    home, tmp = os.environ["HOME"], os.environ["TMPDIR"]
    fs = os.statvfs(tmp)
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split()[4] in (home, tmp)]
    report("ready", sid=os.environ["SHARNESS_SESSION"], home=home, tmp=tmp,
           same_device=os.stat(home).st_dev == os.stat(tmp).st_dev, size_bytes=fs.f_blocks * fs.f_frsize,
           inodes=fs.f_files, inodes_free=fs.f_ffree, mounts=mounts,
           writable_home=os.access(home, os.W_OK), xdg_config=os.environ.get("XDG_CONFIG_HOME"))


def fill(path: Path) -> None:
    """Write 1 MiB at a time until the tmpfs refuses: how much got in, and the errno."""
    written, error = 0, None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:  # the last write that fits may be short: the next one names the refusal
            written += os.write(fd, CHUNK)
    except OSError as exc:
        error = errno_name(exc.errno)
    finally:
        os.close(fd)
    report("filled", written=written, errno=error, file=str(path))


def count_inodes(home: Path) -> None:
    """Create empty files until the tmpfs refuses (empty files take no page: only the inode limit binds)."""
    created, error = 0, None
    try:
        while True:
            (home / f"f{created}").touch(exist_ok=False)
            created += 1
    except OSError as exc:
        error = errno_name(exc.errno)
    report("counted", created=created, errno=error)
    for index in range(created):
        (home / f"f{index}").unlink()


def run(argv: list[str]) -> dict[str, object]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except OSError as exc:
        return {"errno": errno_name(exc.errno)}
    return {"errno": None, "exit": done.returncode, "stderr": done.stderr.strip()[-200:]}


def attempt(probe: str, action: Callable[[], object]) -> None:
    try:
        action()
    except OSError as exc:
        report(probe, errno=errno_name(exc.errno))
    else:
        report(probe, errno=None)


def drop_and_run(tmp: Path) -> None:
    """An ELF it wrote, the same setuid (its own uid), the loader mapping it, and a device node of its own."""
    binary = tmp / "true-copy"
    shutil.copyfile("/usr/bin/true", binary)
    binary.chmod(0o755)
    report("exec.dropped", **run([str(binary)]))
    setuid = tmp / "true-setuid"
    shutil.copyfile("/usr/bin/true", setuid)
    setuid.chmod(0o4755)
    report("exec.dropped_setuid", set=bool(setuid.stat().st_mode & stat.S_ISUID), **run([str(setuid)]))
    report("exec.loader_maps", **run([os.path.realpath(LOADER), str(binary)]))
    attempt("mknod.char", lambda: os.mknod(tmp / "null-own", stat.S_IFCHR | 0o666, os.makedev(1, 3)))


def use_planted(tmp: Path) -> None:
    """What root put in its TMPDIR: a char device (1:3, /dev/null's numbers) and a setuid-root copy of id."""
    attempt("planted.device_open", lambda: os.close(os.open(tmp / "planted-null", os.O_RDWR)))
    report("planted.setuid_exec", **run([str(tmp / "planted-id"), "-u"]))


def main() -> int:
    home, tmp = Path(os.environ["HOME"]), Path(os.environ["TMPDIR"])
    where()
    wait_for("fill")
    big = tmp / "big"
    fill(big)
    wait_for("inodes")
    big.unlink()
    count_inodes(home)
    wait_for("exec")
    drop_and_run(tmp)
    report("dropped")
    wait_for("planted")
    use_planted(tmp)
    report("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
