"""The app for test_shell_unpolled.py: starts as many commands as the shell door lets live, each printing 64 MiB
on each stream, and polls none of them; then asks for one more, then polls each to its end.

    unpolled_app.py      prints {"probe": "unpolled", "started", "refused", "polled"}
"""

from __future__ import annotations

import json

from doors._refusal import DoorRefused
from doors.shell.client import ShellClient

MIB = 1 << 20
SCRIPT = "head -c 67108864 /dev/zero | tr '\\0' y; head -c 67108864 /dev/zero | tr '\\0' z >&2"
LIVE = 8  # doors.shell.max_live's default


def main() -> None:
    shell = ShellClient.from_env()
    started = [shell.start(script=SCRIPT, max_output_bytes=64 * MIB) for _ in range(LIVE)]
    try:
        shell.start(argv=["true"])
        refused = None
    except DoorRefused as exc:  # the door still answers: the commands it holds wait for their polls
        refused = {"status": exc.refusal.status, "error": exc.refusal.row}
    polled = {}
    for command_id in started:
        after, sizes, final = 0, {"stdout": 0, "stderr": 0}, None
        while final is None:
            answer = shell.poll(command_id, after, wait_ms=5000)
            for frame in answer["frames"]:
                after = frame["seq"]
                if frame.get("stream") in sizes and "omitted" not in frame:
                    sizes[frame["stream"]] += len(frame.get("text", ""))
                final = frame.get("final", final)
        polled[command_id] = {"bytes": sizes, "exit_code": final["exit_code"]}
    print(json.dumps({"probe": "unpolled", "started": started, "refused": refused, "polled": polled}), flush=True)


if __name__ == "__main__":
    main()
