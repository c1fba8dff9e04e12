"""refuse_secrets and the keys door's fingerprint: content holding a kept secret is refused, whole or split across
chunks, two appends or two files written one after the other; what the door cannot see is said too."""

from __future__ import annotations

import json
import os
import random
from typing import Any

import trio

from doors import fingerprint_of
from doors.fs import build
from tests.doors.fs.conftest import Door

_RNG = random.Random(7)
SECRET = b"sk-ant-api03-" + bytes(_RNG.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(95))
# Pieces that hold no whole 16-byte block alone (doors/_secret_match.py): only a scan across writes sees them.
FIRST, SECOND = SECRET[:10], SECRET[10:24]
ROW = "doors.keys.secrets.anthropic"


def door(root: str, rows: dict[str, Any] | None = None, *, kept: bool = True) -> Door:
    events: list[dict[str, Any]] = []
    fingerprint = fingerprint_of({"anthropic": SECRET}, {"anthropic": ["api.anthropic.com"]}).to_json()
    api = build({"workspace": root, **(rows or {})}, events.append, kept_secrets=fingerprint if kept else None)
    return Door(root, api, events)


def put(fs: Door, path: str, body: bytes) -> Any:
    return trio.run(fs.request, "PUT", f"/v0/fs/files/{path}", body)


def append(fs: Door, path: str, body: bytes) -> Any:
    return trio.run(fs.request, "POST", f"/v0/fs/append/{path}", body)


def refused_naming_the_row(response: Any) -> bool:
    shape = json.loads(response.body)
    return response.status == 403 and shape["error"] == "refuse_secrets" and ROW in shape["detail"]


def test_a_kept_secret_written_whole_is_refused_naming_its_row(workspace: str) -> None:
    fs = door(workspace)
    try:
        assert refused_naming_the_row(put(fs, "notes.txt", b"my key: " + SECRET + b"\n"))
        assert not os.path.exists(os.path.join(workspace, "notes.txt"))
        assert all(SECRET[20:36].decode() not in json.dumps(event) for event in fs.events)
    finally:
        fs.close()


def test_a_streamed_body_with_the_secret_across_a_chunk_boundary_is_refused(workspace: str) -> None:
    fs = door(workspace)
    try:
        body = b"a" * (256 * 1024 - 40) + SECRET + b"b" * 1000  # a streamed body: read in pieces, scanned in them
        assert refused_naming_the_row(put(fs, "big.bin", body))
        assert os.listdir(workspace) == []
    finally:
        fs.close()


def test_split_across_two_appends_is_refused(workspace: str) -> None:
    fs = door(workspace)
    try:
        assert append(fs, "log.txt", b"first: " + FIRST).status in (200, 201)
        assert put(fs, "other.txt", b"an unrelated write in between").status == 201  # the file's tail still holds it
        assert refused_naming_the_row(append(fs, "log.txt", SECOND + b"\n"))
        with open(os.path.join(workspace, "log.txt"), "rb") as log:
            assert log.read() == b"first: " + FIRST
    finally:
        fs.close()


def test_split_across_two_files_written_one_after_the_other_is_refused(workspace: str) -> None:
    fs = door(workspace)
    try:
        assert put(fs, "a.txt", FIRST).status == 201
        assert refused_naming_the_row(put(fs, "b.txt", SECOND))
        assert refused_naming_the_row(append(fs, "c.txt", SECOND))  # an append to another file, the same
    finally:
        fs.close()


def test_what_the_door_cannot_see_a_write_between_the_halves(workspace: str) -> None:
    """The said limit: the tail is of the last write only, so a write between the halves hides the split."""
    fs = door(workspace)
    try:
        assert put(fs, "a.txt", FIRST).status == 201
        assert put(fs, "noise.txt", b"x" * 32).status == 201
        assert put(fs, "b.txt", SECOND).status == 201
        assert put(fs, "c.txt", SECRET[40:54]).status == 201  # 14 bytes: less than a block, never found
    finally:
        fs.close()


def test_without_the_fingerprint_or_with_refuse_secrets_off_the_same_content_lands(workspace: str) -> None:
    for fs in (door(workspace, kept=False), door(workspace, {"refuse_secrets": False})):
        try:
            assert put(fs, "notes.txt", SECRET).status in (200, 201)
            assert append(fs, "log.txt", FIRST).status in (200, 201)
            assert append(fs, "log.txt", SECOND).status == 200
            assert put(fs, "b.txt", SECOND).status in (200, 201)
        finally:
            fs.close()


def test_a_path_naming_a_kept_secret_is_refused_for_every_op(workspace: str) -> None:
    fs = door(workspace)
    try:
        name = SECRET[:40].decode()
        assert refused_naming_the_row(put(fs, f"{name}.txt", b"x"))
        assert refused_naming_the_row(trio.run(fs.request, "GET", f"/v0/fs/stat/{name}"))
        assert put(fs, "plain.txt", b"x").status == 201
        moved = trio.run(fs.request, "POST", "/v0/fs/rename", json.dumps({"from": "plain.txt", "to": name}).encode())
        assert refused_naming_the_row(moved) and os.listdir(workspace) == ["plain.txt"]
    finally:
        fs.close()
