"""The fs door's HTTP API end to end (h11 framing, handlers, dispatch, openat2), with its audit events."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

import pytest

from doors.fs._reads import SMALL_READ

ROWS = {"read_only": [".git"], "append_only": ["log"], "hidden": [".env"], "exec": ["bin"],
        "max_file_bytes": 4 * 1024 * 1024}
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"


def body(response: Any) -> Any:
    return json.loads(response.body)


async def test_write_read_stat_roundtrip_with_etags(door_factory: Any) -> None:
    door = door_factory(ROWS)
    created = await door.request("PUT", "/v0/fs/files/src/a.txt", b"one")
    assert created.status == 404 and body(created)["error"] == "not_found"  # parents are made with mkdir
    assert (await door.request("POST", "/v0/fs/mkdir/src")).status == 201
    created = await door.request("PUT", "/v0/fs/files/src/a.txt", b"one")
    assert created.status == 201 and body(created)["created"] is True
    etag = created.header("etag")
    read = await door.request("GET", "/v0/fs/files/src/a.txt")
    assert read.status == 200 and read.body == b"one" and read.header("etag") == etag
    assert body(await door.request("GET", "/v0/fs/stat/src/a.txt"))["etag"] == etag
    replaced = await door.request("PUT", "/v0/fs/files/src/a.txt", b"two", (("if-match", etag),))
    assert replaced.status == 200 and replaced.header("etag") != etag
    stale = await door.request("PUT", "/v0/fs/files/src/a.txt", b"three", (("if-match", etag),))
    assert stale.status == 409 and body(stale)["error"] == "version"
    create_only = await door.request("PUT", "/v0/fs/files/src/a.txt", b"x", (("if-none-match", "*"),))
    assert create_only.status == 409
    with open(os.path.join(door.root, "src", "a.txt"), "rb") as landed:
        assert landed.read() == b"two"


async def test_byte_ranges(door_factory: Any) -> None:
    door = door_factory()
    await door.request("PUT", "/v0/fs/files/f", b"0123456789")
    ranged = await door.request("GET", "/v0/fs/files/f", headers=(("range", "bytes=2-4"),))
    assert ranged.status == 206 and ranged.body == b"234" and ranged.header("content-range") == "bytes 2-4/10"
    assert (await door.request("GET", "/v0/fs/files/f?offset=7&length=50")).body == b"789"
    assert (await door.request("GET", "/v0/fs/files/f", headers=(("range", "bytes=20-"),))).status == 400
    assert (await door.request("GET", "/v0/fs/files/f", headers=(("range", "bytes=0-1,4-5"),))).status == 400


async def test_large_bodies_stream_both_ways(door_factory: Any) -> None:
    door = door_factory(ROWS)
    content = os.urandom(3 * 1024 * 1024 + 17)
    assert (await door.request("PUT", "/v0/fs/files/big", content)).status == 201
    read = await door.request("GET", "/v0/fs/files/big")
    assert len(content) > SMALL_READ and read.body == content
    appended = await door.request("POST", "/v0/fs/append/log", content[: 2 * 1024 * 1024])
    assert appended.status == 201 and body(appended)["size"] == 2 * 1024 * 1024


async def test_append_grows_and_never_replaces(door_factory: Any) -> None:
    door = door_factory(ROWS)
    assert (await door.request("POST", "/v0/fs/append/log", b"a\n")).status == 201
    assert (await door.request("POST", "/v0/fs/append/log", b"b\n")).status == 200
    for method, target in (("PUT", "/v0/fs/files/log"), ("DELETE", "/v0/fs/files/log")):
        refused = await door.request(method, target, b"x" if method == "PUT" else b"")
        assert refused.status == 403 and body(refused)["error"] == "append_only"
    renamed = await door.request("POST", "/v0/fs/rename", json.dumps({"from": "log", "to": "old"}).encode())
    assert renamed.status == 403 and body(renamed)["error"] == "append_only"
    assert (await door.request("GET", "/v0/fs/files/log")).body == b"a\nb\n"


async def test_key_split_across_two_appends_is_refused(door_factory: Any) -> None:
    door = door_factory(ROWS)
    cut = 20  # "-----BEGIN OPENSSH P" lands; the rest would complete the marker
    assert (await door.request("POST", "/v0/fs/append/log", b"note\n" + KEY[:cut])).status == 201
    refused = await door.request("POST", "/v0/fs/append/log", KEY[cut:])
    assert refused.status == 403 and body(refused)["error"] == "refuse_secrets"
    assert (await door.request("GET", "/v0/fs/files/log")).body == b"note\n" + KEY[:cut]


async def test_key_in_a_write_is_refused_and_nothing_lands(door_factory: Any) -> None:
    door = door_factory(ROWS)
    padded = os.urandom(200_000).replace(b"-", b"_") + KEY
    refused = await door.request("PUT", "/v0/fs/files/id_ed25519", padded)
    assert refused.status == 403 and body(refused)["error"] == "refuse_secrets"
    assert os.listdir(door.root) == []
    assert not any("BEGIN" in json.dumps(event) for event in door.events)


async def test_read_only_hidden_and_listing(door_factory: Any) -> None:
    door = door_factory(ROWS)
    os.mkdir(os.path.join(door.root, ".git"))
    with open(os.path.join(door.root, ".git", "HEAD"), "w") as out:
        out.write("ref")
    with open(os.path.join(door.root, ".env"), "w") as out:
        out.write("TOKEN=1")
    assert (await door.request("GET", "/v0/fs/files/.git/HEAD")).body == b"ref"
    for method, target in (("PUT", "/v0/fs/files/.git/HEAD"), ("DELETE", "/v0/fs/files/.git"),
                           ("POST", "/v0/fs/mkdir/.git/x"), ("POST", "/v0/fs/append/.git/HEAD")):
        refused = await door.request(method, target, b"x" if method != "DELETE" else b"")
        assert refused.status == 403 and body(refused)["error"] == "read_only", target
    hidden = await door.request("GET", "/v0/fs/files/.env")
    assert hidden.status == 403 and body(hidden)["error"] == "hidden"
    names = [entry["name"] for entry in body(await door.request("GET", "/v0/fs/list"))["entries"]]
    assert names == [".git"]


async def test_symlink_to_a_protected_place_is_judged_where_it_leads(door_factory: Any) -> None:
    door = door_factory(ROWS)
    os.mkdir(os.path.join(door.root, ".git"))
    os.symlink(".git", os.path.join(door.root, "innocent"))
    os.symlink(".env", os.path.join(door.root, "peek"))
    with open(os.path.join(door.root, ".env"), "w") as out:
        out.write("TOKEN=1")
    refused = await door.request("PUT", "/v0/fs/files/innocent/config", b"x")
    assert refused.status == 403 and body(refused)["error"] == "read_only" and "symlink" in body(refused)["detail"]
    peek = await door.request("GET", "/v0/fs/files/peek")
    assert peek.status == 403 and body(peek)["error"] == "hidden"


async def test_escapes_refused(door_factory: Any) -> None:
    door = door_factory(ROWS)
    for target, row in (("/v0/fs/files/..%2F..%2Fetc%2Fpasswd", "within_root"),
                        ("/v0/fs/files/%2Fetc%2Fpasswd", "within_root"),
                        ("/v0/fs/files/a/../../x", "within_root"),
                        ("/v0/fs/files/a%00b", "path")):
        refused = await door.request("GET", target)
        assert body(refused)["error"] == row, target
        assert refused.status in (400, 403)


async def test_mkdir_delete_rename(door_factory: Any) -> None:
    door = door_factory(ROWS)
    assert (await door.request("POST", "/v0/fs/mkdir/d")).status == 201
    assert body(await door.request("POST", "/v0/fs/mkdir/d"))["created"] is False
    await door.request("PUT", "/v0/fs/files/d/f", b"x")
    not_empty = await door.request("DELETE", "/v0/fs/files/d")
    assert not_empty.status == 409 and body(not_empty)["error"] == "not_empty"
    moved = await door.request("POST", "/v0/fs/rename", b'{"from": "d/f", "to": "g"}')
    assert moved.status == 200 and os.path.exists(os.path.join(door.root, "g"))
    await door.request("PUT", "/v0/fs/files/h", b"y")
    clash = await door.request("POST", "/v0/fs/rename", b'{"from": "g", "to": "h"}')
    assert clash.status == 409 and body(clash)["error"] == "exists"
    assert (await door.request("POST", "/v0/fs/rename", b'{"from": "g"}')).status == 400
    assert (await door.request("DELETE", "/v0/fs/files/d")).status == 200
    assert (await door.request("DELETE", "/v0/fs/files/d")).status == 404


async def test_exec_bit_only_where_allowed(door_factory: Any) -> None:
    door = door_factory(ROWS)
    await door.request("POST", "/v0/fs/mkdir/bin")
    assert (await door.request("PUT", "/v0/fs/files/bin/tool?exec=1", b"#!/bin/sh\n")).status == 201
    assert stat.S_IMODE(os.stat(os.path.join(door.root, "bin", "tool")).st_mode) == 0o755
    refused = await door.request("PUT", "/v0/fs/files/tool?exec=1", b"#!/bin/sh\n")
    assert refused.status == 403 and body(refused)["error"] == "exec"
    await door.request("PUT", "/v0/fs/files/plain", b"x")
    mode = os.stat(os.path.join(door.root, "plain")).st_mode
    assert stat.S_IMODE(mode) == 0o644 and not mode & (stat.S_ISUID | stat.S_ISGID)


async def test_a_rename_does_not_carry_executables_out_of_the_exec_prefixes(door_factory: Any) -> None:
    """Else bin/tool written 0755 and renamed to ./tool would be an executable outside doors.fs.exec."""
    door = door_factory(ROWS)
    await door.request("POST", "/v0/fs/mkdir/bin")
    await door.request("PUT", "/v0/fs/files/bin/tool?exec=1", b"#!/bin/sh\n")
    await door.request("PUT", "/v0/fs/files/bin/notes", b"plain")
    for source, dest in (("bin/tool", "tool"), ("bin", "tools")):
        moved = await door.request("POST", "/v0/fs/rename", json.dumps({"from": source, "to": dest}).encode())
        assert moved.status == 403 and body(moved)["error"] == "exec", body(moved)
        assert not os.path.exists(os.path.join(door.root, dest))
    assert (await door.request("POST", "/v0/fs/rename", b'{"from": "bin/tool", "to": "bin/tool2"}')).status == 200
    assert (await door.request("POST", "/v0/fs/rename", b'{"from": "bin/notes", "to": "notes"}')).status == 200


@pytest.mark.parametrize("request_body", [
    b'{"from": "a\\ud800", "to": "b"}', b'{"from": "a", "to": "\\udfff"}', b'{"from": "\xed\xa0\x80", "to": "b"}',
    b"[" * 16_000,  # under the rename body limit (16 KiB), past the interpreter's depth
])
async def test_a_rename_body_that_is_not_unicode_json_is_a_400(door_factory: Any, request_body: bytes) -> None:
    """A lone surrogate, UTF-8-encoded surrogate bytes or nesting past the interpreter: 400, nothing renamed."""
    door = door_factory(ROWS)
    await door.request("PUT", "/v0/fs/files/a", b"x")
    refused = await door.request("POST", "/v0/fs/rename", request_body)
    assert refused.status == 400, body(refused)
    assert os.path.exists(os.path.join(door.root, "a")) and not os.path.exists(os.path.join(door.root, "b"))


async def test_sizes_and_session_quotas(door_factory: Any) -> None:
    door = door_factory({"max_file_bytes": 10, "max_total_bytes": 25, "max_files": 3})
    too_big = await door.request("PUT", "/v0/fs/files/a", b"x" * 11)
    assert too_big.status == 413 and body(too_big)["error"] == "max_file_bytes"
    for name in ("a", "b"):
        assert (await door.request("PUT", f"/v0/fs/files/{name}", b"x" * 10)).status == 201
    spent = await door.request("PUT", "/v0/fs/files/a", b"x" * 6)
    assert spent.status == 507 and body(spent)["error"] == "max_total_bytes"
    assert (await door.request("POST", "/v0/fs/append/a", b"x")).status == 413  # 10 + 1 > max_file_bytes
    assert (await door.request("POST", "/v0/fs/mkdir/c")).status == 201
    files = await door.request("POST", "/v0/fs/mkdir/d")
    assert files.status == 507 and body(files)["error"] == "max_files"


async def test_every_operation_is_one_audit_event_without_content(door_factory: Any) -> None:
    door = door_factory(ROWS)
    await door.request("PUT", "/v0/fs/files/a", b"hello-content")
    await door.request("GET", "/v0/fs/files/a")
    await door.request("PUT", "/v0/fs/files/.git/x", b"hello-content")
    assert [(e["op"], e["path"], e["decision"], e["row"]) for e in door.events] == [
        ("write", "a", "allow", ""), ("read", "a", "allow", ""), ("write", ".git/x", "refuse", "read_only")]
    assert door.events[0]["bytes"] == 13 and door.events[0]["client_role"] == "app"
    assert not any("hello-content" in json.dumps(event) for event in door.events)


async def test_declared_oversize_is_refused_before_the_body(door_factory: Any) -> None:
    door = door_factory({"max_file_bytes": 10})
    refused = await door.request("PUT", "/v0/fs/files/a", b"x" * 100)
    assert refused.status == 413 and os.listdir(door.root) == []
    assert door.events[-1]["bytes"] == 100
