"""Started commands: their frames kept for poll, their stdin for write, their cgroup for signal.

A started command runs exactly as a streamed one (doors/shell/_command.py); instead of a client draining
its frames, a collector keeps them (bounded by the command's own output cap, heartbeats dropped), and poll
returns those after the seq the client has, waiting up to wait_ms for one when there is none. A finished
command is kept (the most recent KEEP_FINISHED of them), so a write after its end is told it ended.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import trio

from doors._refusal import DoorRefused, Refusal
from doors.shell._command import Running
from doors.shell._job_request import Poll, Write
from doors.shell._output import Frame

KEEP_FINISHED = 64


@dataclass
class Job:
    """One started command and what it has said so far."""

    running: Running
    frames: list[dict[str, Any]] = field(default_factory=list)
    changed: trio.Event = field(default_factory=trio.Event)
    done: bool = False

    async def collect(self, receive: trio.MemoryReceiveChannel[Frame]) -> None:
        """Keep every frame the command makes (but heartbeats) until its final record (NDJSON lines)."""
        async with receive:
            async for lines in receive:
                for line in (lines if isinstance(lines, bytes) else b"".join(lines)).splitlines():
                    frame = json.loads(line)
                    if "alive" not in frame:
                        self.frames.append(frame)
                self._wake()
        self.done = True
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def poll(self, ask: Poll) -> dict[str, Any]:
        """Frames after `ask.after`, waiting up to wait_ms for one; `done` once the final record is among them."""
        if not self._after(ask.after) and not self.done:
            with trio.move_on_after(ask.wait_ms / 1000):
                await self.changed.wait()
        # Every frame after `after` is returned, so once the command is done its final record is among them.
        return {"id": self.running.command_id, "frames": self._after(ask.after), "done": self.done}

    def _after(self, seq: int) -> list[dict[str, Any]]:
        return [frame for frame in self.frames if frame["seq"] > seq]

    async def write(self, ask: Write) -> dict[str, Any]:
        """Write to the command's stdin (then close it with `eof`); 409 when it has ended or has no pipe."""
        pipe = self.running.stdin
        if self.done or self.running.final is not None:
            raise _conflict(ask.command_id, "has ended: its stdin is closed", "start it again")
        if pipe is None or not self.running.request.stdin_pipe:
            raise _conflict(ask.command_id, "was not started with stdin \"pipe\"", 'start it with stdin: "pipe"')
        try:
            if ask.data:
                await pipe.send_all(ask.data)
            if ask.eof:
                await pipe.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise _conflict(ask.command_id, "no longer reads its stdin", "poll it for its final record") from None
        return {"id": ask.command_id, "written": len(ask.data), "eof": ask.eof}

    def summary(self) -> dict[str, Any]:
        """What list shows of it."""
        final = self.running.final
        return {"id": self.running.command_id, "pid": self.running.pid, **self.running.request.audit_command(),
                "cwd": self.running.request.cwd, "running": not self.done, "exit": final}


def _conflict(command_id: str, what: str, hint: str) -> DoorRefused:
    return DoorRefused(Refusal(409, "shell.command", "shell", f"command {command_id} {what}", hint))


class JobTable:
    """The started commands of the session, by id."""

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    def add(self, job: Job) -> None:
        self._jobs[job.running.command_id] = job
        finished = [key for key, kept in self._jobs.items() if kept.done]
        for key in finished[:max(len(finished) - KEEP_FINISHED, 0)]:
            del self._jobs[key]

    def get(self, command_id: str) -> Job:
        """The job, or 404 naming the id."""
        job = self._jobs.get(command_id)
        if job is None:
            raise DoorRefused(Refusal(404, "shell.command", "shell", f"no started command {command_id}",
                                      "GET /v0/shell/list shows the commands this door holds"))
        return job

    def listing(self) -> list[dict[str, Any]]:
        return [job.summary() for job in self._jobs.values()]
