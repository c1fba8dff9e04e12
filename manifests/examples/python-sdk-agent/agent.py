"""A minimal coding agent on the official `anthropic` SDK, written as if no harness existed.

It edits files with plain open() and runs commands as its own children (subprocess), in a loop with the model
until the model stops asking for tools. Under sharness-launch nothing in it changes: ANTHROPIC_BASE_URL points
the SDK at the model door, the workspace is a mount the fs door serves (`app.workspace: "mount"`), and every
child it starts inherits every lock the app has. docs/run-your-agent.md shows its manifest.

    python3 agent.py WORKSPACE "the task"
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anthropic

TOOLS = [
    {"name": "read_file", "description": "The text of a file of the workspace.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "write_file", "description": "Replace a file of the workspace with new text.",
     "input_schema": {"type": "object", "required": ["path", "content"],
                      "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}},
    {"name": "run", "description": "Run a command in the workspace; its exit code and output.",
     "input_schema": {"type": "object", "properties": {"argv": {"type": "array", "items": {"type": "string"}}},
                      "required": ["argv"]}},
]
MAX_TURNS = 20


def use_tool(workspace: str, name: str, arguments: dict[str, Any]) -> str:
    """Do what the model asked; a failure is an answer for the model, not a crash."""
    try:
        if name == "read_file":
            with open(os.path.join(workspace, arguments["path"]), encoding="utf-8") as file:
                return file.read()
        if name == "write_file":
            with open(os.path.join(workspace, arguments["path"]), "w", encoding="utf-8") as file:
                file.write(arguments["content"])
            return "written"
        if name == "run":
            argv = [sys.executable if arg == "python" else arg for arg in arguments["argv"]]
            done = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, timeout=300)
            return f"exit {done.returncode}\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
    except OSError as exc:
        return f"{name} failed: {exc}"
    return f"no tool {name}"


def main(workspace: str, task: str) -> int:
    client = anthropic.Anthropic()
    model = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(MAX_TURNS):
        reply = client.messages.create(model=model, max_tokens=4096, tools=TOOLS, messages=messages)
        messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        calls = [block for block in reply.content if block.type == "tool_use"]
        for block in reply.content:
            if block.type == "text":
                print(f"model: {block.text}", flush=True)
        if not calls:
            return 0
        results = []
        for call in calls:
            answer = use_tool(workspace, call.name, dict(call.input))
            print(f"tool {call.name}({call.input}) -> {answer.splitlines()[0] if answer else ''}", flush=True)
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": answer})
        messages.append({"role": "user", "content": results})
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
