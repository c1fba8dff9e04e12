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
            frames.append(frame)
            if until is not None and until in str(frame.get("text", "")):
                stream.close()
                break
    except DoorRefused as refused:
        print(json.dumps({"probe": name, "refused": {"status": refused.refusal.status, **refused.refusal.shape()},
                          "frames": frames}), flush=True)
        return
    print(json.dumps({"probe": name, "frames": frames}), flush=True)


def main() -> None:
    cases = json.loads(sys.argv[1])
    with ShellClient.from_env() as shell:
        print(json.dumps({"probe": "hello", **shell.hello()}), flush=True)
        for case in _templated(cases):
            held = hold(shell, int(case.get("hold", 0)))
            run_case(shell, case["name"], dict(case["body"]), case.get("until"))
            for stream in held:
                stream.close()  # the client leaves: the door kills the command


if __name__ == "__main__":
    main()
