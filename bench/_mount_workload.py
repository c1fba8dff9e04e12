"""The file workload of the mount bench, run twice in one bench run: by the app inside a real session through the
workspace mount, and by the bench itself on a directory of the same file system (direct). Standard library only:
the app runs it by path, with nothing of the project imported.

    python bench/_mount_workload.py DIR QUICK   # prints one {"probe": "mount_bench", ...} line
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MIB = 1024 * 1024


def _stream(path: str, piece: int, total: int) -> float:
    """Write `total` bytes in `piece`-byte writes, fsync, close: MiB/s."""
    block = b"s" * piece
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(total // piece):
        os.write(fd, block)
    os.fsync(fd)
    os.close(fd)
    return total / MIB / (time.perf_counter() - start)


def _read(path: str, piece: int) -> float:
    """Read the file whole in `piece`-byte reads (what the page cache holds of it stays): MiB/s."""
    size = os.stat(path).st_size
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, piece):
        pass
    os.close(fd)
    return size / MIB / (time.perf_counter() - start)


def _small_files(directory: str, count: int) -> float:
    """Create, write 100 bytes to and close `count` new files: files/s."""
    os.mkdir(directory)
    body = b"x" * 100
    start = time.perf_counter()
    for number in range(count):
        fd = os.open(f"{directory}/f{number:05d}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body)
        os.close(fd)
    return count / (time.perf_counter() - start)


def _git_status(tree: str) -> float:
    """Seconds of `git status --porcelain` on a committed tree, the second of two runs: the first refreshes the
    index (written where the tree is: the stat data the host's commit recorded is not the mount's)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "GIT_CONFIG_NOSYSTEM": "1"}
    command = ["git", "-c", "safe.directory=*", "status", "--porcelain"]
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def workload(directory: str, quick: bool) -> dict[str, float]:
    """Every figure, in `directory` (which holds `tree/`, a committed repository of 10 000 files)."""
    small_total, large_total = (16 * MIB, 64 * MIB) if quick else (64 * MIB, 256 * MIB)
    figures = {
        "write_4k_mib_s": _stream(f"{directory}/w4k.bin", 4096, small_total),
        "write_128k_mib_s": _stream(f"{directory}/w128k.bin", 128 * 1024, large_total),
        "read_128k_mib_s": _read(f"{directory}/w128k.bin", 128 * 1024),
        "small_files_per_s": _small_files(f"{directory}/small", 500 if quick else 2000),
        "git_status_s": _git_status(f"{directory}/tree"),
    }
    for name in ("w4k.bin", "w128k.bin"):
        os.unlink(f"{directory}/{name}")
    return figures


if __name__ == "__main__":
    print(json.dumps({"probe": "mount_bench", **workload(sys.argv[1], sys.argv[2] == "1")}), flush=True)
