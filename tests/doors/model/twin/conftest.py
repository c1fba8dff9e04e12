"""The twin as a server process (`python -m doors.model.twin --listen 127.0.0.1:0`), read from its stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = {
    "twin": "twin-script/v0",
    "models": ["claude-sonnet-5-5", "claude-haiku-5-5"],
    "rules": [
        {"when": {"contains": "weather"}, "reply": {"text": "Sunny, 21 degrees."}},
        {"when": {"contains": "list files"}, "reply": {"content": [
            {"type": "text", "text": "Listing."}, {"type": "tool_use", "name": "bash", "input": {"command": "ls"}}]}},
    ],
}
MAX_BODY_BYTES = 256 * 1024


@dataclass(frozen=True)
class TwinServer:
    process: subprocess.Popen[str]
    host: str
    port: int

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


@pytest.fixture(scope="module")
def twin_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinServer]:
    script = tmp_path_factory.mktemp("twin") / "script.json"
    script.write_text(json.dumps(SCRIPT))
    process = subprocess.Popen(
        [sys.executable, "-m", "doors.model.twin", "--listen", "127.0.0.1:0", "--script", str(script),
         "--max-body-bytes", str(MAX_BODY_BYTES)],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[4])
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening "), f"the twin did not start: {line!r}"
        host, port = line.split()[1].rsplit(":", 1)
        yield TwinServer(process, host, int(port))
        assert process.poll() is None, "the twin server died during the tests"
    finally:
        process.terminate()
        process.wait()
