"""A probe app for the shell door's session tests: runs each case through ShellClient and reports it.

    shell_probe.py CASES_JSON     CASES_JSON: [{"name": ..., "body": {run request fields}}, ...]

It judges nothing: each case prints one JSON line {"probe": name, "frames": [...]} or
{"probe": name, "refused": {status, error, who, detail}}; the test decides.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from doors._refusal import DoorRefused
from doors.shell.client import ShellClient


def run_case(shell: ShellClient, name: str, body: dict[str, Any]) -> None:
    argv = body.pop("argv", None)
    frames: list[dict[str, Any]] = []
    try:
        for frame in shell.stream(argv, **body):
            frames.append(frame)
    except DoorRefused as refused:
        print(json.dumps({"probe": name, "refused": {"status": refused.refusal.status, **refused.refusal.shape()},
                          "frames": frames}), flush=True)
        return
    print(json.dumps({"probe": name, "frames": frames}), flush=True)


def main() -> None:
    cases = json.loads(sys.argv[1])
    with ShellClient.from_env() as shell:
        print(json.dumps({"probe": "hello", **shell.hello()}), flush=True)
        for case in cases:
            run_case(shell, case["name"], dict(case["body"]))


if __name__ == "__main__":
    main()
