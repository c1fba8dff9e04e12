"""A probe app for the shell door's session tests: runs each case through ShellClient and reports it.

    shell_probe.py CASES_JSON     CASES_JSON: [{"name": ..., "body": {run request fields}}, ...]

It judges nothing: each case prints one JSON line {"probe": name, "frames": [...]} or
{"probe": name, "refused": {status, error, who, detail}}; the test decides.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from doors._refusal import DoorRefused
from doors.fs.client import FsClient
from doors.shell._wire import decode_chunk, encode_chunk
from doors.shell.client import ShellClient


def _templated(value: Any) -> Any:
    """`{sid}` in any string of a case becomes this session's id (the probe knows it; the test does not yet)."""
    if isinstance(value, str):
        return value.replace("{sid}", os.environ["SHARNESS_SESSION"])
    if isinstance(value, list):
        return [_templated(item) for item in value]
    if isinstance(value, dict):
        return {key: _templated(item) for key, item in value.items()}
    return value


def hold(shell: ShellClient, count: int) -> list[Iterator[dict[str, Any]]]:
    """Start `count` long commands and read only their `started` frame: they stay live until closed."""
    held = []
    for _ in range(count):
        stream = shell.stream(["sleep", "1000"])
        next(stream)
        held.append(stream)
    return held


def run_case(shell: ShellClient, name: str, body: dict[str, Any], until: str | None = None) -> None:
    """Run one case; with `until`, stop reading (and leave) once a frame holds that text."""
    argv = body.pop("argv", None)
    frames: list[dict[str, Any]] = []
    try:
        stream = shell.stream(argv, **body)
        for frame in stream:
            frames.append(_printable(frame))
            if until is not None and until.encode() in decode_chunk(frame):
                stream.close()
                break
    except DoorRefused as refused:
        print(json.dumps({"probe": name, "refused": {"status": refused.refusal.status, **refused.refusal.shape()},
                          "frames": frames}), flush=True)
        return
    print(json.dumps({"probe": name, "frames": frames}), flush=True)


def _printable(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame of the binary framing as the NDJSON one would hold it (`data` as text or base64), for the test."""
    if "data" not in frame:
        return frame
    return {**{key: value for key, value in frame.items() if key != "data"}, **encode_chunk(frame["data"])}


def _until(shell: ShellClient, command_id: str, done: Any) -> list[dict[str, Any]]:
    """Poll until `done(frames)` holds (each poll waits for a new frame; bounded by the command's timeout)."""
    frames: list[dict[str, Any]] = []
    while not done(frames):
        answer = shell.poll(command_id, frames[-1]["seq"] if frames else 0, wait_ms=5000)
        frames += answer["frames"]
    return frames


def jobs(shell: ShellClient) -> dict[str, Any]:
    """start, write, poll, signal and list on real commands; what each answered."""
    seen: dict[str, Any] = {}
    reader = shell.start(["sh", "-c", "while read line; do echo got:$line; done; echo bye"], stdin_pipe=True)
    shell.write(reader, b"one\n")
    seen["first"] = _until(shell, reader, lambda fs: any("got:one" in f.get("text", "") for f in fs))
    shell.write(reader, b"two\n", eof=True)
    seen["rest"] = _until(shell, reader, lambda fs: any("final" in f for f in fs))
    try:
        shell.write(reader, b"late\n")
    except DoorRefused as refused:
        seen["late"] = {"status": refused.refusal.status, **refused.refusal.shape()}
    sleeper = shell.start(["sleep", "1000"])
    seen["listed"] = shell.list()
    seen["signalled"] = shell.signal(sleeper, "TERM")
    seen["sleeper"] = _until(shell, sleeper, lambda fs: any("final" in f for f in fs))
    return seen


def other_call(shell: ShellClient, case: dict[str, Any]) -> dict[str, Any]:
    """An overlay apply (`"apply": true`), the fs door's listing of a directory (`"fs_list": PATH`, recursive:
    what the workspace itself holds), or a write through it as the app (`"fs_write": {path, text}`); a refusal
    as its shape."""
    try:
        if case.get("apply"):
            return shell.apply()
        with FsClient.from_env() as fs:
            if case.get("fs_write"):
                return fs.write(case["fs_write"]["path"], case["fs_write"]["text"].encode())
            return {"tree": _tree(fs, case["fs_list"])}
    except DoorRefused as refused:
        return {"refused": {"status": refused.refusal.status, **refused.refusal.shape()}}


def _tree(fs: FsClient, path: str) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for item in fs.list(path):
        child = f"{path}/{item['name']}" if path else item["name"]
        tree[item["name"]] = _tree(fs, child) if item["kind"] == "dir" else fs.read(child).decode(errors="replace")
    return tree


def main() -> None:
    cases = json.loads(sys.argv[1])
    with ShellClient.from_env() as shell:
        print(json.dumps({"probe": "hello", **shell.hello()}), flush=True)
        for case in _templated(cases):
            if case.get("jobs"):
                print(json.dumps({"probe": case["name"], **jobs(shell)}), flush=True)
                continue
            if case.get("apply") or case.get("fs_list") is not None or case.get("fs_write"):
                print(json.dumps({"probe": case["name"], **other_call(shell, case)}), flush=True)
                continue
            held = hold(shell, int(case.get("hold", 0)))
            run_case(shell, case["name"], dict(case["body"]), case.get("until"))
            for stream in held:
                stream.close()  # the client leaves: the door kills the command


if __name__ == "__main__":
    main()
