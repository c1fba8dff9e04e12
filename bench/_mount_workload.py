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
from typing import Any

MIB = 1024 * 1024
SPANS = "spans"  # not a figure: where each write phase began and ended, and how many operations it made


def _stream(path: str, piece: int, total: int) -> tuple[float, float, list[float]]:
    """Write `total` bytes in `piece`-byte writes, fsync, close: MiB/s, this process's CPU µs a write, and the
    span (wall clock, which every namespace shares: the bench reads the fs door's CPU over it)."""
    block = b"s" * piece
    span = [time.time()]
    cpu = time.process_time()
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(total // piece):
        os.write(fd, block)
    os.fsync(fd)
    os.close(fd)
    elapsed = time.perf_counter() - start
    span.append(time.time())
    return total / MIB / elapsed, (time.process_time() - cpu) * 1e6 / (total // piece), span


def _read(path: str, piece: int) -> float:
    """Read the file whole in `piece`-byte reads (what the page cache holds of it stays): MiB/s."""
    size = os.stat(path).st_size
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, piece):
        pass
    os.close(fd)
    return size / MIB / (time.perf_counter() - start)


def small_file_count(quick: bool) -> int:
    """How many small files a run creates (the same on the floor: bench/_fuse_floor.py)."""
    return 500 if quick else 2000


def _small_files(directory: str, count: int) -> tuple[float, float, list[float]]:
    """Create, write 100 bytes to and close `count` new files: files/s, CPU µs a file, the span."""
    os.mkdir(directory)
    body = b"x" * 100
    span = [time.time()]
    cpu = time.process_time()
    start = time.perf_counter()
    for number in range(count):
        fd = os.open(f"{directory}/f{number:05d}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body)
        os.close(fd)
    elapsed = time.perf_counter() - start
    span.append(time.time())
    return count / elapsed, (time.process_time() - cpu) * 1e6 / count, span


def _git_status(tree: str) -> float:
    """Seconds of `git status --porcelain` on a committed tree, the second of two runs: the first refreshes the
    index (written where the tree is: the stat data the host's commit recorded is not the mount's)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "GIT_CONFIG_NOSYSTEM": "1"}
    command = ["git", "-c", "safe.directory=*", "status", "--porcelain"]
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def workload(directory: str, quick: bool) -> dict[str, Any]:
    """Every figure, in `directory` (which holds `tree/`, a committed repository of 10 000 files), and under
    SPANS the wall-clock span of each write phase with the operations it made."""
    small_total, large_total = (16 * MIB, 64 * MIB) if quick else (64 * MIB, 256 * MIB)
    files = small_file_count(quick)
    figures: dict[str, Any] = {}
    spans: dict[str, list[float]] = {}
    for name, piece, total in (("write_4k", 4096, small_total), ("write_128k", 128 * 1024, large_total)):
        rate, cpu, span = _stream(f"{directory}/w{name[6:]}.bin", piece, total)
        figures[f"{name}_mib_s"], figures[f"{name}_app_us_per_write"] = rate, cpu
        spans[name] = [*span, total // piece]
    figures["read_128k_mib_s"] = _read(f"{directory}/w128k.bin", 128 * 1024)
    rate, cpu, span = _small_files(f"{directory}/small", files)
    figures["small_files_per_s"], figures["small_files_app_us_per_file"] = rate, cpu
    spans["small_files"] = [*span, files]
    figures["git_status_s"] = _git_status(f"{directory}/tree")
    for name in ("w4k.bin", "w128k.bin"):
        os.unlink(f"{directory}/{name}")
    return {**figures, SPANS: spans}


if __name__ == "__main__":
    print(json.dumps({"probe": "mount_bench", **workload(sys.argv[1], sys.argv[2] == "1")}), flush=True)
