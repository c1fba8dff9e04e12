"""The shell door's client for Python agents: blocking, frames as they arrive, the final record at the end.

    with ShellClient.from_env() as shell:
        result = shell.run(["pytest", "-q"], cwd="src", timeout_ms=600_000)
        print(result.stdout.decode(), result.final["exit_code"])

`stream(...)` yields each frame (dicts: `started`, `{"stream", "data": bytes}`, `omitted`, `final`) as the
door sends it, read from the binary framing (`ndjson=True`: the door's NDJSON, data frames `{"stream",
"text"|"base64"}`); `run(...)` collects them. A refusal raises DoorRefused naming the row and who refused.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import h11

from doors._refusal import DoorRefused, read_refusal
from doors.client import DoorClient, connect_door, sock_readable_while_idle
from doors.shell._wire import (
    APPLY_PATH,
    FRAMES_TYPE,
    LIST_PATH,
    POLL_PATH,
    RUN_PATH,
    SIGNAL_PATH,
    START_PATH,
    WRITE_PATH,
    FrameReader,
    decode_chunk,
)

RECEIVE_BYTES = 256 * 1024  # as much as BlockingTls takes from the socket at a time
MAX_ERROR_BYTES = 64 * 1024
# A stream's connection, once its response ended whole, is kept for the next command for this long at most (the
# door closes a connection idle for its idle_timeout_s, 30 s: one kept a third of that is never closed under a
# request that was already on its way, and one the door closed is seen readable and not reused).
REUSE_IDLE_S = 10.0


@dataclass
class RunResult:
    """A finished command: its output as the door kept it (head, marker, tail), and its final record."""

    stdout: bytes = b""
    stderr: bytes = b""
    final: dict[str, Any] = field(default_factory=dict)
    command_id: str = ""
    applied: dict[str, Any] | None = None  # with apply=True: the overlay's apply after it (or why it was skipped)


def run_body(argv: list[str] | None = None, *, script: str | None = None, shell: str | None = None,
             cwd: str | None = None, env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
             timeout_ms: int | None = None, max_output_bytes: int | None = None, tty: bool = False,
             apply: bool = False) -> dict[str, Any]:
    """The JSON body of a run request (only the fields given)."""
    body: dict[str, Any] = {"argv": argv} if argv is not None else {"script": script}
    optional = {"shell": shell, "cwd": cwd, "env": dict(env) if env is not None else None,
                "timeout_ms": timeout_ms, "max_output_bytes": max_output_bytes}
    body.update({key: value for key, value in optional.items() if value is not None})
    if tty:
        body["tty"] = True
    if apply:
        body["apply"] = True
    if isinstance(stdin, str):
        body["stdin"] = stdin
    elif stdin is not None:
        body["stdin"] = {"base64": base64.b64encode(stdin).decode()}
    return body


class ShellClient:
    """Commands through the shell door: a stream holds a connection of its own, and one whose response ended
    whole is kept for the next (no handshake between commands run one after another)."""

    def __init__(self, door: DoorClient, *, timeout_s: float | None = None) -> None:
        self.door = door
        self.timeout_s = timeout_s  # None: wait as long as the command runs (its own timeout bounds it)
        self._idle: tuple[Any, h11.Connection, float] | None = None  # socket, its h11 state, since when

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> ShellClient:
        """A client from the SHARNESS_* variables the launcher gives the app."""
        return cls(DoorClient.from_env("shell", environ))

    def hello(self) -> dict[str, Any]:
        """GET /v0/hello of the shell door."""
        return self.door.hello()

    def stream(self, argv: list[str] | None = None, *, ndjson: bool = False, **fields: Any) -> Iterator[dict[str, Any]]:
        """Start a command; yield every frame as it arrives, the final record last."""
        payload = json.dumps(run_body(argv, **fields), separators=(",", ":")).encode()
        sock, http = self._connection()
        kept = False
        try:
            sock.sendall(http.send(h11.Request(method="POST", target=RUN_PATH, headers=[
                ("host", "shell"), ("content-type", "application/json"), ("content-length", str(len(payload))),
                ("accept", "application/x-ndjson" if ndjson else FRAMES_TYPE)]))
                + http.send(h11.Data(data=payload)) + http.send(h11.EndOfMessage()))
            yield from _frames(sock, http)
            kept = self._keep(sock, http)
        finally:
            if not kept:  # a refusal, a stream left before its end, a door that closes: never reused
                sock.close()

    def _connection(self) -> tuple[Any, h11.Connection]:
        """The kept connection if it is fresh and quiet (a door that closed it makes it readable), else a new one."""
        idle, self._idle = self._idle, None
        if idle is not None:
            sock, http, since = idle
            if time.monotonic() - since < REUSE_IDLE_S and not sock_readable_while_idle(sock):
                return sock, http
            sock.close()
        sock = connect_door(self.door.dial)
        sock.settimeout(self.timeout_s)
        return sock, h11.Connection(h11.CLIENT)

    def _keep(self, sock: Any, http: h11.Connection) -> bool:
        """Keep the connection for the next stream when both sides ended their message and may go on."""
        if http.our_state is not h11.DONE or http.their_state is not h11.DONE:
            return False
        http.start_next_cycle()
        if self._idle is not None:
            self._idle[0].close()
        self._idle = (sock, http, time.monotonic())
        return True

    def run(self, argv: list[str] | None = None, **fields: Any) -> RunResult:
        """Run a command to its end and return what it printed and how it ended."""
        result = RunResult()
        output: dict[str, list[bytes]] = {"stdout": [], "stderr": []}  # joined once: += is quadratic
        for frame in self.stream(argv, **fields):
            if "started" in frame:
                result.command_id = str(frame["started"]["id"])
            elif "final" in frame:
                result.final = dict(frame["final"])
            elif "apply" in frame:
                result.applied = dict(frame["apply"])
            elif frame.get("stream") in output:
                output[frame["stream"]].append(decode_chunk(frame))
        result.stdout, result.stderr = b"".join(output["stdout"]), b"".join(output["stderr"])
        return result

    def start(self, argv: list[str] | None = None, *, stdin_pipe: bool = False, **fields: Any) -> str:
        """Start a command and return its id; its frames are kept for poll (stdin_pipe: write to it later)."""
        body = run_body(argv, **fields)
        if stdin_pipe:
            body["stdin"] = "pipe"
        return str(self._call("POST", START_PATH, body)["id"])

    def poll(self, command_id: str, after: int = 0, wait_ms: int = 0) -> dict[str, Any]:
        """`{id, frames, done}`: the frames after seq `after`, waiting up to wait_ms for one."""
        return self._call("POST", POLL_PATH, {"id": command_id, "after": after, "wait_ms": wait_ms})

    def write(self, command_id: str, data: bytes, *, eof: bool = False) -> dict[str, Any]:
        """Write to a started command's stdin (`eof` closes it); 409 once it has ended."""
        return self._call("POST", WRITE_PATH, {"id": command_id, "base64": base64.b64encode(data).decode(),
                                               "eof": eof})

    def signal(self, command_id: str, signal: str) -> dict[str, Any]:
        """Send `signal` ("TERM", "INT", "KILL", ...) to every process of a started command."""
        return self._call("POST", SIGNAL_PATH, {"id": command_id, "signal": signal})

    def apply(self) -> dict[str, Any]:
        """Apply the overlay's changes through the fs door: `{paths: [{path, op, status, row?...}], applied,
        unchanged, refused}`."""
        return self._call("POST", APPLY_PATH, {})

    def list(self) -> dict[str, Any]:
        """The started commands the door holds, and how many are live."""
        return self._call("GET", LIST_PATH, None)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        response = self.door.request(method, path, json=body)
        if not response.ok:
            try:
                shape = response.json()
            except ValueError:
                shape = None
            raise DoorRefused(read_refusal(response.status, shape, who="shell", row="http"))
        return dict(response.json())

    def close(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            idle[0].close()
        self.door.close()

    def __enter__(self) -> ShellClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _events(sock: Any, http: h11.Connection) -> Iterator[Any]:
    buffer = memoryview(bytearray(RECEIVE_BYTES))  # one for the stream: h11 appends what it is given to its own
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            http.receive_data(cast(bytes, buffer[:sock.recv_into(buffer)]))  # typed bytes, any bytes-like taken
            continue
        if isinstance(event, h11.ConnectionClosed):
            raise DoorRefused(read_refusal(502, None, who="shell", row="shell.stream",
                                           detail="the shell door closed the stream before the final record"))
        yield event
        if isinstance(event, h11.EndOfMessage):
            return


def _frames(sock: Any, http: h11.Connection) -> Iterator[dict[str, Any]]:
    status, pending = 0, b""
    reader = FrameReader(binary=False)
    for event in _events(sock, http):
        if isinstance(event, h11.Response):
            status = event.status_code
            content_type = dict(event.headers).get(b"content-type", b"").decode("latin-1")
            reader = FrameReader(binary=content_type.startswith(FRAMES_TYPE))
        elif isinstance(event, h11.Data) and status != 200:
            pending += event.data
            if len(pending) > MAX_ERROR_BYTES:
                break
        elif isinstance(event, h11.Data):
            yield from reader.feed(event.data)
    if status != 200:
        try:
            body = json.loads(pending)
        except ValueError:
            body = None
        raise DoorRefused(read_refusal(status, body, who="shell", row="shell.run"))
