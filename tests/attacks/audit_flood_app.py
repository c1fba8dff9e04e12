"""The audit flood: runs confined as the app, outpacing the launcher's audit log while it writes.

Protocol with the test (one line each way per step): it prints `ready`, then for each of `flood` and `stalled`
(the test stops the launcher during the second) it waits for the word, prints `<phase>.started`, and runs
LOOPS children that each stat on one kept-alive connection to the fs door while the parent writes WRITES
files, one after each share of the loops' progress, again after each 503 (as an agent told "retry" would);
it prints what every request was answered. Then, on `token`, it writes a file under a token-shaped name,
renames it, and sends a CONNECT for a token-shaped host through the net door. It judges nothing.
Standard library + the fs client.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections import Counter

from doors.client import DoorRefused
from doors.fs.client import FsClient

LOOPS = 4
TOKEN = "ghp_" + "R3dact" * 6  # 36 characters after the prefix: GitHub's shape


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"audit_flood_app: expected {word!r} on stdin, got {line!r}")


def stat_loop(stats: int, progress_fd: int) -> Counter[int]:
    """`stats` stat calls on one connection; one byte to the parent per hundred; the statuses seen."""
    statuses: Counter[int] = Counter()
    with FsClient.from_env() as fs:
        for number in range(stats):
            try:
                fs.stat("seed.txt")
                statuses[200] += 1
            except DoorRefused as refused:
                statuses[refused.refusal.status] += 1
            if number % 100 == 99:
                os.write(progress_fd, b".")
    return statuses


def start_loops(stats: int) -> tuple[list[tuple[int, int]], int]:
    """LOOPS children, each reporting its statuses on its own pipe; (pid, result fd) each, the progress fd."""
    progress_r, progress_w = os.pipe()
    children = []
    for _ in range(LOOPS):
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(progress_r)
            os.close(result_r)
            try:
                os.write(result_w, json.dumps(stat_loop(stats, progress_w)).encode())
            finally:
                os._exit(0)
        os.close(result_w)
        children.append((pid, result_r))
    os.close(progress_w)
    return children, progress_r


def write_until_done(fs: FsClient, path: str) -> dict[str, object]:
    """Write, and again after each 503; what was answered in the end, and how many 503s came before."""
    refused = 0
    while True:
        try:
            answer = fs.write(path, f"{path}\n".encode())
        except DoorRefused as refusal:
            if refusal.refusal.status != 503:
                return {"path": path, "status": refusal.refusal.status, "row": refusal.refusal.row,
                        "refused_before": refused}
            refused += 1
            time.sleep(0.01)
            continue
        return {"path": path, "status": 201 if answer.get("created") else 200, "refused_before": refused}


def write_meanwhile(fs: FsClient, progress_r: int, phase: str, writes: int, stats: int) -> list[dict[str, object]]:
    """One write after each 1/(writes+1) of the loops' progress."""
    share = max(1, LOOPS * stats // 100 // (writes + 1))
    done = []
    for number in range(writes):
        seen = 0
        while seen < share and (got := os.read(progress_r, share - seen)):
            seen += len(got)
        done.append(write_until_done(fs, f"{phase}-{number}.txt"))
    return done


def collect(children: list[tuple[int, int]], progress_r: int) -> Counter[int]:
    while os.read(progress_r, 65536):
        pass
    os.close(progress_r)
    total: Counter[int] = Counter()
    for pid, result_r in children:
        with os.fdopen(result_r, "rb") as result:
            total.update({int(status): count for status, count in json.loads(result.read() or b"{}").items()})
        os.waitpid(pid, 0)
    return total


def flood(fs: FsClient, phase: str, stats: int, writes: int) -> None:
    wait_for(phase)
    report(f"{phase}.started")
    children, progress_r = start_loops(stats)
    done = write_meanwhile(fs, progress_r, phase, writes, stats)
    statuses = collect(children, progress_r)
    requests = sum(statuses.values()) + sum(1 + int(str(write["refused_before"])) for write in done)
    report(phase, stats={str(k): v for k, v in sorted(statuses.items())}, writes=done, requests=requests)


def connect_status(authority: str) -> int:
    """The status line's code of a CONNECT through the net door's proxy listener (HTTPS_PROXY)."""
    proxy = os.environ["HTTPS_PROXY"].removeprefix("http://")
    host, port = proxy.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        head = b""
        while b"\r\n" not in head and (got := sock.recv(4096)):
            head += got
    return int(head.split(b" ", 2)[1])


def token(fs: FsClient) -> None:
    wait_for("token")
    named = f"{TOKEN}.txt"
    fs.write(named, b"not the secret itself, only its name\n")
    fs.rename(named, f"renamed-{TOKEN}.txt")
    report("token", name=named, connect=connect_status(f"{TOKEN}.example.test:443"))


def main() -> None:
    stats, writes = int(sys.argv[1]), int(sys.argv[2])
    with FsClient.from_env() as fs:
        seeded = write_until_done(fs, "seed.txt")
        report("ready", sid=os.environ["SHARNESS_SESSION"], seed=seeded)
        for phase in ("flood", "stalled"):
            flood(fs, phase, stats, writes)
        token(fs)
    report("done")


if __name__ == "__main__":
    main()
