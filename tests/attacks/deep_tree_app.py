"""Run as the app: build in TMPDIR what teardown must remove and cannot be made to follow.

A chain of DEPTH directories (far past PATH_MAX and Python's recursion limit), every 100th one made 000 by
its owner once it has a child, and at every 1 000th level: symlinks to /etc, /etc/shadow and a directory of
the test's (argv[1]), a FIFO, and a 000 directory holding a 000 file. `hold/` is left empty at the top (the
test may mount something there). It reports `tree.built`, waits for one line on stdin, and exits 0.
Standard library only: it runs inside the confinement.
"""

from __future__ import annotations

import json
import os
import sys

DEPTH = 5000


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def plant(fd: int, outside: str) -> None:
    os.symlink("/etc", "etc", dir_fd=fd)
    os.symlink("/etc/shadow", "shadow", dir_fd=fd)
    os.symlink(outside, "outside", dir_fd=fd)
    os.mkfifo("fifo", dir_fd=fd)
    os.mkdir("locked", 0o700, dir_fd=fd)
    locked = os.open("locked", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    file_fd = os.open("secret", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=locked)
    os.write(file_fd, b"left by the app\n")
    os.fchmod(file_fd, 0)
    os.close(file_fd)
    os.fchmod(locked, 0)
    os.close(locked)


def build(tmp: str, outside: str) -> int:
    os.mkdir(os.path.join(tmp, "hold"), 0o755)
    fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(1, DEPTH + 1):
        os.mkdir("d", 0o700, dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        if level % 1000 == 0:
            plant(child, outside)
        if level % 100 == 0:
            os.fchmod(fd, 0)  # its owner locks it: only a root with CAP_DAC_OVERRIDE walks it now
        os.close(fd)
        fd = child
    os.close(fd)
    return DEPTH


def main() -> None:
    depth = build(os.environ["TMPDIR"], sys.argv[1])
    report("tree.built", depth=depth, tmpdir=os.environ["TMPDIR"], uid=os.getuid())
    sys.stdin.readline()
    report("done")


if __name__ == "__main__":
    main()
