"""The filling app: runs confined as the app and fills its own cgroup (memory and pids) on command.

Protocol with the test (one line each way per step): it prints `ready`, waits for `fill`, fills, prints
`filled` (how much it could take), waits for `write`, then writes through the fs door on the connection it
opened before filling, prints `wrote`, lets everything go and exits 0. Standard library + the fs client.
"""

from __future__ import annotations

import errno
import json
import os
import sys

from doors.fs.client import FsClient

CHUNK = 4 * 1024 * 1024
MARGIN_CHUNKS = 4  # what the holder leaves free under the limit, so the app itself can still run


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"fill_app: expected {word!r} on stdin, got {line!r}")


def chunks_until_oom() -> tuple[int, int]:
    """A child allocates CHUNK after CHUNK until the memory cgroup kills it: how many it got, and the signal."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        held = []
        while True:
            held.append(b"\x01" * CHUNK)  # bytes multiplication touches every page
            os.write(write_end, b".")
    os.close(write_end)
    count = 0
    while got := os.read(read_end, 4096):
        count += len(got)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return count, os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)


def hold_memory(chunks: int) -> tuple[int, int]:
    """A child that takes `chunks` and holds them until the release pipe closes: (pid, release fd)."""
    ready_r, ready_w = os.pipe()
    release_r, release_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(release_w)
        held = [b"\x01" * CHUNK for _ in range(chunks)]
        os.write(ready_w, b"%d" % len(held))
        os.read(release_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(release_r)
    os.read(ready_r, 16)
    os.close(ready_r)
    return pid, release_w


def fill_pids() -> tuple[list[int], int, int]:
    """Sleepers until fork fails: (their pids, the errno fork gave, the release fd)."""
    release_r, release_w = os.pipe()
    children: list[int] = []
    failed = 0
    while not failed and len(children) < 4096:
        try:
            pid = os.fork()
        except OSError as exc:
            failed = exc.errno or -1
            break
        if pid == 0:
            os.close(release_w)
            os.read(release_r, 1)
            os._exit(0)
        children.append(pid)
    os.close(release_r)
    return children, failed, release_w


def main() -> int:
    with FsClient.from_env() as fs:
        fs.write("before.txt", b"written before the fill\n")
        report("ready", sid=os.environ["SHARNESS_SESSION"], pid=os.getpid())
        wait_for("fill")
        oom_chunks, oom_signal = chunks_until_oom()
        holder, memory_release = hold_memory(max(oom_chunks - MARGIN_CHUNKS, 0))
        sleepers, fork_errno, pids_release = fill_pids()
        report("filled", oom_chunks=oom_chunks, oom_signal=oom_signal, held_mb=(oom_chunks - MARGIN_CHUNKS) * 4,
               sleepers=len(sleepers), fork_errno=errno.errorcode.get(fork_errno, str(fork_errno)))
        wait_for("write")
        try:
            answer = fs.write("during.txt", b"written by the app while its cgroup was full\n")
            report("wrote", ok=True, size=answer.get("size"))
        except Exception as exc:  # the test asserts on what is reported
            report("wrote", ok=False, detail=f"{type(exc).__name__}: {exc}"[:300])
        for fd in (memory_release, pids_release):
            os.close(fd)
        for pid in (holder, *sleepers):
            os.waitpid(pid, 0)
    report("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
