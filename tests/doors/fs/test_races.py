"""Races: a symlink swapped in a loop by another process during thousands of requests; concurrent appends."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

# Swaps `d` between a symlink to the real directory inside, an absolute symlink outside, and a relative one
# leading out, each atomically (rename over, and RENAME_EXCHANGE with a real directory).
RACER = r"""
import os, sys
from doors.fs._openat2 import AT_FDCWD, renameat2
root, outside = sys.argv[1], sys.argv[2]
os.chdir(root)
targets = ["real", outside, "../" + os.path.basename(outside)]
i = 0
while True:
    i += 1
    name = f"swap{i % 2}"
    try:
        os.symlink(targets[i % 3], name)
        os.rename(name, "d")
        if i % 5 == 0:
            renameat2(AT_FDCWD, "d", AT_FDCWD, "decoy", 1 << 1)  # RENAME_EXCHANGE
            renameat2(AT_FDCWD, "d", AT_FDCWD, "decoy", 1 << 1)
    except OSError:
        pass
    if not os.path.exists("keep-racing"):
        break
"""
OUTSIDE_SECRET = b"OUTSIDE-SECRET"


@pytest.fixture
def outside() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="sharness-fs-outside-")
    try:
        with open(os.path.join(path, "f"), "wb") as out:
            out.write(OUTSIDE_SECRET)
        os.mkdir(os.path.join(path, "outside-only-name"))
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _snapshot(path: str) -> list[tuple[str, bytes]]:
    found = []
    for directory, dirs, files in os.walk(path):
        for name in sorted(dirs + files):
            full = os.path.join(directory, name)
            content = Path(full).read_bytes() if os.path.isfile(full) else b""
            found.append((os.path.relpath(full, path), content))
    return sorted(found)


REQUESTS = [
    ("GET", "/v0/fs/files/d/f", b""),
    ("GET", "/v0/fs/list/d", b""),
    ("GET", "/v0/fs/stat/d/f", b""),
    ("PUT", "/v0/fs/files/d/new", b"written"),
    ("POST", "/v0/fs/append/d/f", b"appended"),
    ("POST", "/v0/fs/mkdir/d/sub", b""),
    ("DELETE", "/v0/fs/files/d/sub", b""),
    ("POST", "/v0/fs/rename", b'{"from": "d/new", "to": "d/renamed"}'),
]


@pytest.mark.slow
async def test_symlink_swapped_in_a_loop_never_lets_a_request_out(door_factory: Any, outside: str) -> None:
    door = door_factory({"max_total_bytes": 1 << 40, "max_files": 1 << 30})
    root = door.root
    os.mkdir(os.path.join(root, "real"))
    os.mkdir(os.path.join(root, "decoy"))
    with open(os.path.join(root, "real", "f"), "wb") as out:
        out.write(b"inside")
    open(os.path.join(root, "keep-racing"), "w").close()
    before = _snapshot(outside)
    racer = subprocess.Popen([sys.executable, "-c", RACER, root, outside])
    outcomes: dict[str, int] = {}
    try:
        for attempt in range(3000):
            method, target, payload = REQUESTS[attempt % len(REQUESTS)]
            response = await door.request(method, target, payload)
            assert OUTSIDE_SECRET not in response.body
            assert b"outside-only-name" not in response.body
            key = "ok" if response.ok else json.loads(response.body)["error"]
            outcomes[key] = outcomes.get(key, 0) + 1
    finally:
        os.unlink(os.path.join(root, "keep-racing"))
        try:
            racer.wait(timeout=10)
        finally:
            racer.kill()
    assert _snapshot(outside) == before, "a request reached outside the workspace"
    # The race really happened: some requests went through the inside link, some were refused by the kernel.
    assert outcomes.get("ok", 0) > 0 and outcomes.get("within_root", 0) > 0, outcomes


def _record(task: int, seq: int, size: int) -> bytes:
    fill = chr(ord("a") + (task * 7 + seq) % 26).encode()
    return b"<%d:%d:%d:" % (task, seq, size) + fill * size + b">\n"


async def test_concurrent_appends_lose_nothing_and_never_interleave(door_factory: Any) -> None:
    door = door_factory({"append_only": ["log"], "max_file_bytes": 1 << 30, "max_total_bytes": 1 << 40,
                         "max_concurrent_uploads": 24})  # all 24 appenders in flight at once
    rng = random.Random(5)
    sizes = {(t, s): rng.choice([1, 100, 4095, 70_000, 1_500_000]) for t in range(24) for s in range(4)}

    async def appender(task: int) -> None:
        for seq in range(4):
            response = await door.request("POST", "/v0/fs/append/log", _record(task, seq, sizes[task, seq]))
            assert response.status in (200, 201), response.body

    async with trio.open_nursery() as nursery:
        for task in range(24):
            nursery.start_soon(appender, task)
    with open(os.path.join(door.root, "log"), "rb") as landed:
        content = landed.read()
    seen = set()
    for line in content.split(b">\n")[:-1]:
        assert line.startswith(b"<"), line[:40]
        task_field, seq_field, size_field, payload = line[1:].split(b":", 3)
        key = (int(task_field), int(seq_field))
        header = b"<%s:%s:%s:" % (task_field, seq_field, size_field)
        assert payload == _record(*key, int(size_field))[len(header):-2], key
        assert key not in seen
        seen.add(key)
    assert seen == set(sizes)
    assert len(content) == sum(len(_record(t, s, n)) for (t, s), n in sizes.items())
