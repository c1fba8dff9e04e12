"""ShellClient keeps a stream's connection for the next command only when its response ended whole, the door did
not ask to close, and the connection is fresh and quiet; anything else gets a new connection. The door here is h11
in the server role over a socketpair (its framing as the shell door's own), so the client's reads are real."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import h11
import pytest

from doors.shell import client as shell_client
from doors.shell.client import ShellClient

FINAL = {"exit_code": 0, "signal": None, "timed_out": False}


class _Door:
    """Answers each run request on a connection with NDJSON frames; counts the connections it was given."""

    def __init__(self, status: int = 200, close: bool = False) -> None:
        self.status, self.close = status, close
        self.connections: list[socket.socket] = []
        self.requests = 0
        self.threads: list[threading.Thread] = []

    def connect(self, dial: Any) -> _Plain:
        ours, theirs = socket.socketpair()
        self.connections.append(theirs)
        thread = threading.Thread(target=self._serve, args=(theirs,), daemon=True)
        thread.start()
        self.threads.append(thread)
        return _Plain(ours)

    def _serve(self, sock: socket.socket) -> None:
        http = h11.Connection(h11.SERVER)
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                data = sock.recv(65536)
                http.receive_data(data)
                if not data:
                    return
                continue
            if isinstance(event, h11.ConnectionClosed):
                return
            if isinstance(event, h11.EndOfMessage):
                self.requests += 1
                headers = [("content-type", "application/x-ndjson"), ("transfer-encoding", "chunked")]
                if self.close:
                    headers.append(("connection", "close"))
                body = (json.dumps({"started": {"id": f"c{self.requests}", "pid": 1}}) + "\n"
                        + json.dumps({"final": FINAL}) + "\n") if self.status == 200 else json.dumps(
                    {"error": "shell.request.argv", "who": "shell", "detail": "no", "hint": "no"})
                sock.sendall(http.send(h11.Response(status_code=self.status, headers=headers))
                             + http.send(h11.Data(data=body.encode())) + http.send(h11.EndOfMessage()))
                if http.our_state is h11.MUST_CLOSE:
                    sock.close()
                    return
                http.start_next_cycle()


class _Plain:
    """A socket with the surface ShellClient uses of a TLS one (the TLS is not what is tested here)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.closed = False

    def settimeout(self, timeout: float | None) -> None:
        self.sock.settimeout(timeout)

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_into(self, buffer: memoryview) -> int:
        return self.sock.recv_into(buffer)

    def pending(self) -> int:
        return 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.closed = True
        self.sock.close()


@pytest.fixture
def door(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Door]:
    made = _Door(**getattr(request, "param", {}))
    monkeypatch.setattr(shell_client, "connect_door", made.connect)
    yield made
    for connection in made.connections:
        connection.close()


def _client() -> ShellClient:
    return ShellClient(door=type("Door", (), {"dial": None, "close": lambda self: None})())  # type: ignore[arg-type]


def test_commands_one_after_another_share_one_connection(door: _Door) -> None:
    with _client() as shell:
        for _ in range(3):
            assert shell.run(["true"]).final == FINAL
    assert len(door.connections) == 1 and door.requests == 3


def test_a_stream_left_before_its_end_is_closed_and_the_next_command_connects_anew(door: _Door) -> None:
    with _client() as shell:
        stream = shell.stream(["true"])
        assert "started" in next(stream)
        stream.close()
        assert shell.run(["true"]).final == FINAL
    assert len(door.connections) == 2


@pytest.mark.parametrize("door", [{"close": True}], indirect=True)
def test_a_response_that_closes_its_connection_is_not_reused(door: _Door) -> None:
    with _client() as shell:
        shell.run(["true"])
        shell.run(["true"])
    assert len(door.connections) == 2


@pytest.mark.parametrize("door", [{"status": 404}], indirect=True)
def test_a_refused_command_does_not_keep_its_connection(door: _Door) -> None:
    with _client() as shell:
        for _ in range(2):
            with pytest.raises(shell_client.DoorRefused):
                shell.run(["nope"])
    assert len(door.connections) == 2


def test_a_connection_idle_past_the_reuse_window_is_closed_not_reused(door: _Door,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_client, "REUSE_IDLE_S", 0.0)
    with _client() as shell:
        shell.run(["true"])
        kept = shell._idle
        shell.run(["true"])
    assert kept is not None and kept[0].closed
    assert len(door.connections) == 2


def test_a_connection_the_door_closed_while_idle_is_not_reused(door: _Door) -> None:
    with _client() as shell:
        shell.run(["true"])
        door.connections[0].shutdown(socket.SHUT_RDWR)  # the door's idle timeout, say
        door.threads[0].join(timeout=10)
        assert shell.run(["true"]).final == FINAL
    assert len(door.connections) == 2


def test_close_closes_the_kept_connection(door: _Door) -> None:
    shell = _client()
    shell.run(["true"])
    kept = shell._idle
    shell.close()
    assert kept is not None and kept[0].closed and shell._idle is None
