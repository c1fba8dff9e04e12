"""Started commands: their frames kept for poll, their stdin for write, their cgroup for signal.

A started command runs exactly as a streamed one (doors/shell/_command.py); instead of a client draining
its frames, a collector keeps them (heartbeats dropped), and poll returns those after the seq the client has
(at most JOB_KEPT_BYTES of them), waiting up to wait_ms for one when there is none, and lets go of those up
to it (the client has them). What a command keeps that no poll took is bounded by the door, not by its output
cap times the commands: past JOB_KEPT_BYTES its collector takes nothing more until a poll (its pipes wait, as
a streamed command's whose client does not read). A finished command is kept (the most recent KEEP_FINISHED
of them, within FINISHED_KEPT_BYTES of frames), so a write after its end is told it ended.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from doors._refusal import DoorRefused, Refusal
from doors.shell._command import Running
from doors.shell._job_request import Poll, Write
from doors.shell._output import Frame

KEEP_FINISHED = 64
# Before, every frame of every started command stayed until 64 more had finished: eight never polled, each with
# 64 MiB a stream, and the door was OOM-killed, ending the session (tests/attacks/test_shell_unpolled.py).
JOB_KEPT_BYTES = 4 << 20
FINISHED_KEPT_BYTES = 64 << 20
JOB_FRAME_BUFFER = 1  # frames waiting for the collector: it may be held, and a frame is up to a MiB


@dataclass
class Job:
    """One started command and what it has said so far."""

    running: Running
    frames: list[dict[str, Any]] = field(default_factory=list)
    changed: trio.Event = field(default_factory=trio.Event)
    done: bool = False
    sizes: list[int] = field(default_factory=list)  # each kept frame's line, in bytes
    kept_bytes: int = 0
    on_done: Callable[[], None] = lambda: None

    async def collect(self, receive: trio.MemoryReceiveChannel[Frame]) -> None:
        """Keep every frame the command makes (but heartbeats) until its final record (NDJSON lines); past
        JOB_KEPT_BYTES not yet polled, wait for a poll before taking the next."""
        async with receive:
            while True:
                while self.kept_bytes >= JOB_KEPT_BYTES:
                    await self.changed.wait()
                try:
                    lines = await receive.receive()
                except trio.EndOfChannel:
                    break
                for line in (lines if isinstance(lines, bytes) else b"".join(lines)).splitlines():
                    frame = json.loads(line)
                    if "alive" not in frame:
                        self.frames.append(frame)
                        self.sizes.append(len(line))
                        self.kept_bytes += len(line)
                self._wake()
        self.done = True
        self._wake()
        self.on_done()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def poll(self, ask: Poll) -> dict[str, Any]:
        """Frames after `ask.after`, waiting up to wait_ms for one; `done` once the final record is among them.
        Those up to `ask.after` are let go: the client has them."""
        self._let_go(ask.after)
        if not self._after(ask.after) and not self.done:
            with trio.move_on_after(ask.wait_ms / 1000):
                await self.changed.wait()
        frames = self._after(ask.after)
        # `done` once the final record is among the frames returned (an answer holds at most JOB_KEPT_BYTES).
        done = self.done and (not frames or frames[-1] is self.frames[-1])
        return {"id": self.running.command_id, "frames": frames, "done": done}

    def _after(self, seq: int) -> list[dict[str, Any]]:
        """The frames after `seq`, up to JOB_KEPT_BYTES of them (one at least)."""
        frames: list[dict[str, Any]] = []
        size = 0
        for frame, line in zip(self.frames, self.sizes, strict=True):
            if frame["seq"] <= seq:
                continue
            if frames and size + line > JOB_KEPT_BYTES:
                break
            frames.append(frame)
            size += line
        return frames

    def _let_go(self, seq: int) -> None:
        kept = [(frame, size) for frame, size in zip(self.frames, self.sizes, strict=True) if frame["seq"] > seq]
        if len(kept) < len(self.frames):
            self.frames, self.sizes = [frame for frame, _ in kept], [size for _, size in kept]
            self.kept_bytes = sum(self.sizes)
            self._wake()

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
        job.on_done = self._trim
        self._trim()

    def _trim(self) -> None:
        """Drop the oldest finished commands past KEEP_FINISHED or FINISHED_KEPT_BYTES (the newest one stays)."""
        finished = [key for key, kept in self._jobs.items() if kept.done]
        kept_bytes = sum(self._jobs[key].kept_bytes for key in finished)
        for key in finished[:-1]:
            if len(finished) <= KEEP_FINISHED and kept_bytes <= FINISHED_KEPT_BYTES:
                break
            kept_bytes -= self._jobs.pop(key).kept_bytes
            finished.remove(key)

    def get(self, command_id: str) -> Job:
        """The job, or 404 naming the id."""
        job = self._jobs.get(command_id)
        if job is None:
            raise DoorRefused(Refusal(404, "shell.command", "shell", f"no started command {command_id}",
                                      "GET /v0/shell/list shows the commands this door holds"))
        return job

    def listing(self) -> list[dict[str, Any]]:
        return [job.summary() for job in self._jobs.values()]
