"""The shell door: runs commands for the app, each confined, each in its own cgroup, each accounted for.

`POST /v0/shell/run` takes a run request (doors/shell/_request.py) and answers 200 with NDJSON frames as
they happen (chunked): `started`, stdout and stderr data with sequence numbers, then `final`. A request the
rules refuse, or a command that cannot be confined as the manifest says, is answered with the error shape
and is not run (fail closed). One audit event before each command runs (`shell.run`: argv or the script's
hash, cwd, the env's names) and one when it ended (`shell.exit`: exit, signal, timed_out, times, bytes).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from doors._http import Limits, Request, Response, Route, json_response
from doors._refusal import DoorRefused
from doors._transport import AsyncDoorClient, Dial
from doors.fs import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2
from doors.shell._cgroup import own_cgroup_dirs
from doors.shell._command import (
    COALESCE_BYTES,
    FRAME_BUFFER,
    ChannelBody,
    Running,
    clean_up,
    keep_read_buffers,
    supervise,
)
from doors.shell._env import command_env, command_proxy, write_trust_bundle
from doors.shell._fs_calls import FsDoorCalls
from doors.shell._job_request import parse_poll, parse_signal, parse_write
from doors.shell._jobs import JOB_FRAME_BUFFER, Job, JobTable
from doors.shell._landlock import command_ruleset
from doors.shell._output import Frame, Framer, Outcome
from doors.shell._overlay import Applier, OverlayPlaces, check_overlay, no_overlay
from doors.shell._refusals import cwd_refusal, not_started, refusal_event, refuse
from doors.shell._request import MAX_BODY_BYTES, MAX_STDIN_BYTES, RunRequest, parse_run
from doors.shell._selftest import self_test
from doors.shell._spare import NotSingleThreaded, Spare, Spares
from doors.shell._spawn import Launch, NotStarted, cpu_ns, read_report, send_launch
from doors.shell._stdio import open_stdio
from doors.shell._wire import (
    APPLY_PATH,
    FRAMES_TYPE,
    LIST_PATH,
    POLL_PATH,
    RUN_PATH,
    SIGNAL_PATH,
    START_PATH,
    WRITE_PATH,
    wants_frames,
)
from pki.vocabulary import EGRESS_CA_ROW

if TYPE_CHECKING:
    from doors._contract import DoorContract
    from doors._door import DoorRuntime

NDJSON = "application/x-ndjson"
DEFAULT_MAX_LIVE = 8
# What a command may open for writing besides its scratch: /dev/tty reaches only its own controlling terminal.
COMMAND_DEVICES = ("/dev/null", "/dev/tty")
HELD_ROWS = frozenset({"workspace", "max_live", "overlay_mb"})
# Connections to the fs door an apply writes through at once (its fsyncs overlap; fs's max_concurrent_uploads
# is 8 per client role by default). Measured in docs/decisions/shell.md.
APPLY_CONNECTIONS = 4
Audit = Callable[[dict[str, Any]], None]
# A frame is up to 1 MiB (a pipe's read): sent in one TLS write, not sixteen of 64 KiB, each a trip through
# pyOpenSSL and trio (docs/decisions/bench.md, "Throughput"). Still one piece per connection held unsent. The
# socket holds one piece too, so the door encrypts the next frame while the client reads this one ("shpipe").
SHELL_LIMITS = Limits(send_piece_bytes=COALESCE_BYTES, send_buffer_bytes=COALESCE_BYTES)


@dataclass(frozen=True)
class ShellConfig:
    """What the launcher told the door (its rows) and what the door opened from them at start."""

    workspace_fd: int | None  # the workspace (mode "read"), else None: cwd is then beneath HOME
    home: str
    tmp: str
    proxy: str | None
    model: Mapping[str, str] | None  # the model door's variables (edge shell→model), as the app gets them
    cgroups: tuple[str, ...]
    ruleset_fd: int
    max_live: int
    overlay: OverlayPlaces | None = None  # mode "overlay": where its upper layer is, the fs door it applies to
    trust: str | None = None  # the system store plus the egress CA, when a host has a bound credential

    @classmethod
    def from_rows(cls, rows: Mapping[str, Any]) -> ShellConfig:
        """Open what the rows name; raise (the door then does not start) when any of it is missing."""
        mode = rows.get("workspace")
        workspace = rows.get("workspace_dir") if mode in ("read", "overlay") else None
        workspace_fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if workspace else None
        home, tmp = str(rows["home"]), str(rows["tmp"])
        cgroups = own_cgroup_dirs()
        if not cgroups:
            raise RuntimeError("the shell door sees no cgroup of its own: each command needs one under it")
        model = dict(rows["model"]) if isinstance(rows.get("model"), dict) else None
        # In overlay mode the workspace's path is the overlay (the launcher mounted it): commands write there.
        writable = (home, tmp, *COMMAND_DEVICES, *((str(workspace),) if mode == "overlay" else ()))
        return cls(workspace_fd, home, tmp, rows.get("proxy"), model, cgroups,
                   command_ruleset(writable), int(rows.get("max_live", DEFAULT_MAX_LIVE)),
                   OverlayPlaces.from_rows(rows), write_trust_bundle(home, rows.get(EGRESS_CA_ROW)))


class ShellDoor:
    """The run route over a config; commands run in the door's own nursery (`serve_commands`)."""

    def __init__(self, config: ShellConfig, audit: Audit, report: Audit, applier: Applier | None = None) -> None:
        self.config = config
        self.audit = audit
        self.report = report
        self.applier = applier  # overlay mode: applies the upper layer through the fs door
        self.live: dict[str, Running] = {}
        self.jobs = JobTable()
        self.spares = Spares(config.tmp, config.cgroups, config.ruleset_fd)
        self._nursery: trio.Nursery | None = None
        self._ready = trio.Event()

    def routes(self) -> list[Route]:
        """The routes served next to hello."""
        return [Route("POST", RUN_PATH, self.run, max_body_bytes=MAX_BODY_BYTES),
                Route("POST", START_PATH, self.start, max_body_bytes=MAX_BODY_BYTES),
                Route("POST", POLL_PATH, self.poll), Route("POST", SIGNAL_PATH, self.signal),
                Route("POST", WRITE_PATH, self.write, max_body_bytes=2 * MAX_STDIN_BYTES),
                Route("GET", LIST_PATH, self.listing), Route("POST", APPLY_PATH, self.apply)]

    async def serve_commands(self) -> None:
        """The nursery every command runs in; cancelled (every command killed) when the door stops."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.spares.refill(up_to=1)  # the pool's second after the first command: not on the session's start
                self._ready.set()
                await trio.sleep_forever()
        finally:
            self.spares.close()  # the zygote no command took: killed, its cgroup and TMPDIR removed

    async def run(self, request: Request) -> Response:
        """POST /v0/shell/run: start the command and stream its frames as they happen (NDJSON, or the binary
        framing when `accept` names it)."""
        binary = wants_frames(request.header("accept"))
        return await self._stream(await self._admit(request, started=False), binary)

    async def start(self, request: Request) -> Response:
        """POST /v0/shell/start: start the command; its frames are kept for poll."""
        running = await self._admit(request, started=True)
        job = Job(running)
        self.jobs.add(job)
        send, receive = trio.open_memory_channel[Frame](JOB_FRAME_BUFFER)
        await self._supervise_in_door(running, send, trio.CancelScope())
        assert self._nursery is not None
        self._nursery.start_soon(job.collect, receive)
        return json_response({"id": running.command_id, "pid": running.pid})

    async def poll(self, request: Request) -> Response:
        """POST /v0/shell/poll: the frames after `after`, waiting up to wait_ms for one."""
        ask = parse_poll(request.json())
        job = self.jobs.get(ask.command_id)
        return json_response(await job.poll(ask))

    async def write(self, request: Request) -> Response:
        """POST /v0/shell/write: bytes to a started command's stdin (409 once it has ended)."""
        ask = parse_write(request.json())
        return json_response(await self.jobs.get(ask.command_id).write(ask))

    async def signal(self, request: Request) -> Response:
        """POST /v0/shell/signal: a signal to every process of a started command (its whole cgroup)."""
        command_id, signum = parse_signal(request.json())
        job = self.jobs.get(command_id)
        if job.done:
            raise refuse(409, "shell.command", f"command {command_id} has ended", "poll it for its final record")
        self.audit({"door": "shell", "kind": "shell.signal", "id": command_id, "signal": signum})
        return json_response({"id": command_id, "signal": signum,
                              "signalled": job.running.cgroup.signal_members(signum)})

    async def apply(self, request: Request) -> Response:
        """POST /v0/shell/apply: the overlay's changes through the fs door; per path applied or refused."""
        if self.applier is None:
            refused = no_overlay()
            self.report({"door": "shell", "kind": "shell.apply", "decision": "refuse", "row": refused.refusal.row})
            raise refused
        return json_response(await self.applier.apply(request.peer_id or ""))

    async def _apply_after(self, running: Running, outcome: Outcome) -> dict[str, Any]:
        """`apply: true` on run: apply once the command exited 0 (a failed build's half is not applied)."""
        assert self.applier is not None
        exit_code = outcome.record()["exit_code"]
        if exit_code != 0:
            return {"skipped": f"the command's exit code is {exit_code}, not 0: nothing was applied"}
        return await self.applier.apply("", running.command_id)  # its shell.run event says by whom

    async def listing(self, request: Request) -> Response:
        """GET /v0/shell/list: the started commands this door holds."""
        return json_response({"commands": self.jobs.listing(), "live": len(self.live),
                              "max_live": self.config.max_live})

    async def _admit(self, request: Request, *, started: bool) -> Running:
        """Decide, audit, start: one chokepoint for every command."""
        try:
            run = parse_run(request.json(), started=started)
            if run.apply and self.applier is None:
                raise no_overlay()
            if len(self.live) >= self.config.max_live:
                raise refuse(429, "shell.max_live", f"{len(self.live)} commands are live, the most this "
                              "session allows", "wait for one to end, or raise doors.shell.max_live")
            cwd_fd = self._cwd(run.cwd)
            spare = self._spare(cwd_fd)
        except DoorRefused as refused:
            self.report(refusal_event(refused.refusal))
            raise
        command_id = spare.command_id
        try:
            self.audit({"door": "shell", "kind": "shell.run", "id": command_id, **run.audit_command(),
                        "cwd": run.cwd, "env_names": [name for name, _ in run.env], "timeout_ms": run.timeout_ms,
                        "stdin_bytes": len(run.stdin or b""), "tty": run.tty, "by": request.peer_id or "",
                        # the net door's events of its requests carry `command` = this id (a label it could change)
                        "egress_command": command_id if self.config.proxy else None})
        except BaseException:
            self.spares.discard(spare)
            os.close(cwd_fd)
            raise
        try:
            return await self._start(spare, run, cwd_fd)
        finally:
            os.close(cwd_fd)

    def _spare(self, cwd_fd: int) -> Spare:
        """The zygote the command will run in (its id, TMPDIR and cgroup), or 503: it is not run."""
        try:
            return self.spares.take()
        except NotSingleThreaded:
            os.close(cwd_fd)
            raise refuse(503, "shell.confinement", "the door has more than one thread: it cannot fork a "
                         "command safely, so it runs none", "report this: the shell door must stay "
                         "single-threaded") from None
        except OSError as exc:
            os.close(cwd_fd)
            raise refuse(503, "shell.confinement", f"the command was not run: its TMPDIR or cgroup cannot be "
                         f"made ({os.strerror(exc.errno or 0)})", "check doors.shell.process.scratch_mb and "
                         "max_pids; retry once a command has ended") from None

    def _cwd(self, cwd: str) -> int:
        """An fd on `cwd`, resolved beneath the workspace (or HOME): no symlink or `..` leads out."""
        root = self.config.workspace_fd
        base = root if root is not None else os.open(self.config.home, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return openat2(base, cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0,
                           RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
        except OSError as exc:
            raise cwd_refusal(cwd, exc.errno or errno.EPERM, root is not None) from None
        finally:
            if root is None:
                os.close(base)

    async def _start(self, spare: Spare, run: RunRequest, cwd_fd: int) -> Running:
        try:
            stdio = open_stdio(run.tty, run.stdin is not None or run.stdin_pipe)
            env = command_env(run.env, self.config.home, spare.tmpdir,
                              command_proxy(self.config.proxy, spare.command_id), run.tty, self.config.model,
                              self.config.trust)
            # the zygote's own steps (a spawned one's interpreter start) are not its command's CPU
            setup_ns = cpu_ns(spare.zygote.pid)
            try:
                send_launch(spare.zygote, Launch(run.argv, env, cwd_fd, stdio.child, run.tty))
            finally:
                for fd in stdio.close_after_fork:
                    os.close(fd)
            failure = await _read_report(spare.zygote.report)
        except BaseException:  # not started, or cancelled while it started: nothing of it stays
            self.spares.discard(spare)
            raise
        os.close(spare.zygote.report)
        stdin = trio.lowlevel.FdStream(stdio.stdin) if stdio.stdin is not None else None
        running = Running(spare.command_id, run, spare.zygote.pid, spare.pidfd, spare.cgroup,
                          trio.lowlevel.FdStream(stdio.stdout), trio.lowlevel.FdStream(stdio.stderr), stdin,
                          setup_cpu_ns=setup_ns)
        if failure is not None:
            await clean_up(running)
            shutil.rmtree(spare.tmpdir, ignore_errors=True)
            self.report({"door": "shell", "kind": "shell.exit", "id": spare.command_id, "started": False,
                         "step": failure.step, "errno": failure.errno})
            raise not_started(run, failure)
        return running

    async def _stream(self, running: Running, binary: bool) -> Response:
        send, receive = trio.open_memory_channel[Frame](FRAME_BUFFER)
        scope = trio.CancelScope()

        def abandon() -> None:
            running.killed_by = running.killed_by or "client_gone"
            scope.cancel()

        sent = trio.Event()
        await self._supervise_in_door(running, send, scope, binary, sent)
        return Response(200, (("content-type", FRAMES_TYPE if binary else NDJSON),),
                        ChannelBody(receive, abandon, sent.set))

    async def _supervise_in_door(self, running: Running, send: trio.MemorySendChannel[Frame],
                                 scope: trio.CancelScope, binary: bool = False, sent: trio.Event | None = None) -> None:
        await self._ready.wait()
        assert self._nursery is not None
        self.live[running.command_id] = running
        self._nursery.start_soon(self._supervised, running, send, scope, binary, sent)

    async def _supervised(self, running: Running, send: trio.MemorySendChannel[Frame],
                          scope: trio.CancelScope, binary: bool, sent: trio.Event | None) -> None:
        reported = False

        def ended(running: Running) -> None:
            nonlocal reported
            reported = True
            self._report_exit(running)
            self.live.pop(running.command_id, None)  # its final record is made: it no longer counts as live

        try:
            with scope:
                after = self._apply_after if running.request.apply else None
                await supervise(running, Framer(running.request.max_output_bytes, binary=binary), send, after, ended)
        finally:
            self.live.pop(running.command_id, None)
            shutil.rmtree(os.path.join(self.config.tmp, running.command_id), ignore_errors=True)
            if not reported:  # it ended without a final record (its client left, the door is stopping)
                self._report_exit(running)
        if sent is not None:
            await sent.wait()  # its response went out first: the next zygote's fork is not on that path
        self.spares.refill()

    def _report_exit(self, running: Running) -> None:
        """The command's one shell.exit event: queued before its final frame is sent, or when it ended without one."""
        self.report({"door": "shell", "kind": "shell.exit", "id": running.command_id,
                     "killed_by": running.killed_by, **(running.final or {"exit_code": None})})


async def _read_report(fd: int) -> NotStarted | None:
    """The child's report: EOF alone (execve closed it) means the command runs. The caller closes `fd`."""
    os.set_blocking(fd, False)
    data = b""
    while True:
        await trio.lowlevel.wait_readable(fd)
        piece = os.read(fd, 256)
        if not piece:
            return read_report(data)
        data += piece


def serve(contract: DoorContract) -> None:
    """Run the shell door process from its contract: self-test first (no test passed, no door)."""
    from doors._door import run_reporting
    from doors._status import StatusSender

    def run(status: StatusSender) -> None:
        config = ShellConfig.from_rows(contract.rows)
        if config.overlay is not None:
            check_overlay(config.overlay, str(contract.rows["workspace_dir"]))
        self_test(config.cgroups, config.ruleset_fd, config.home)
        keep_read_buffers()
        trio.run(_serve_shell, contract, status, config)

    run_reporting(contract, run)


def describe_rows(rows: Mapping[str, Any]) -> dict[str, Any]:
    """The rows hello shows: the manifest's own (where the launcher put HOME, TMPDIR and the workspace is not a row)."""
    shown = {"workspace": rows.get("workspace", "none"), "max_live": int(rows.get("max_live", DEFAULT_MAX_LIVE))}
    if "overlay_mb" in rows:
        shown["overlay_mb"] = int(rows["overlay_mb"])
    return shown


def applier_of(runtime: DoorRuntime, overlay: OverlayPlaces | None) -> Applier | None:
    """The applier of overlay mode: the fs door's client as this door's own SVID (edge shell→fs)."""
    if overlay is None:
        return None
    contract = runtime.contract
    dial = Dial("fs", overlay.fs_socket, runtime.client_ctx, contract.trust_domain, contract.session_id,
                contract.role)
    return Applier(overlay.upper, FsDoorCalls([AsyncDoorClient(dial) for _ in range(APPLY_CONNECTIONS)]),
                   runtime.audit)


async def _serve_shell(contract: DoorContract, status: Any, config: ShellConfig) -> None:
    from dataclasses import replace

    from doors._door import serve_door

    door: ShellDoor | None = None

    def door_of(runtime: DoorRuntime) -> ShellDoor:
        nonlocal door
        if door is None:
            door = ShellDoor(config, runtime.audit, runtime.report, applier_of(runtime, config.overlay))
        return door

    def background(runtime: DoorRuntime) -> list[Callable[[], Awaitable[None]]]:
        return [functools.partial(door_of(runtime).serve_commands)]

    await serve_door(replace(contract, rows=describe_rows(contract.rows)), status,
                     lambda runtime: door_of(runtime).routes(), held_rows=HELD_ROWS,
                     background=background, limits=SHELL_LIMITS)
