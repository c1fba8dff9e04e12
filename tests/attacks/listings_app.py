"""Run as the app: ask the fs door for a large listing on many connections and never read the answers.

Protocol (argv: the directory to list, how many entries it holds, how many connections to stall):
  `stall`  opens the connections, sends `GET /v0/fs/list/DIR` on each and reads nothing; then a second,
           well-behaved client lists DIR whole. Reports `stalled` with what that client got.
  `drain`  (sent once the door has cut them) reads every stalled connection to its end: a connection the
           door cut ends before its response does. Reports `drained`, then lists DIR whole once more (`after`).
Standard library, h11 and the project's clients: it runs inside the confinement.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import h11

from doors._transport._tls import client_context_from_file
from doors.client import Dial, DoorClient, connect_door


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"listings_app: expected {word!r} on stdin, got {line!r}")


def stall(ctx: Any, directory: str, count: int) -> list[Any]:
    env = os.environ
    request = h11.Connection(h11.CLIENT).send(h11.Request(method="GET", target=f"/v0/fs/list/{directory}",
                                                          headers=[("host", "fs")])) or b""
    sockets = []
    for _ in range(count):
        sock = connect_door(Dial("fs", env["SHARNESS_DOOR_FS"], ctx, env["SHARNESS_TRUST_DOMAIN"],
                                 env["SHARNESS_SESSION"], "app"))
        sock.sendall(request)
        sockets.append(sock)
    return sockets


def whole_listing(directory: str) -> dict[str, Any]:
    with DoorClient.from_env("fs") as fs:
        answer = fs.request("GET", f"/v0/fs/list/{directory}")
    entries = answer.json().get("entries", []) if answer.ok else []
    return {"status": answer.status, "entries": len(entries)}


def read_to_end(sock: Any) -> tuple[int, bool]:
    """(bytes of body received, whether the response was complete) once the door closed or finished."""
    http = h11.Connection(h11.CLIENT)
    http.send(h11.Request(method="GET", target="/", headers=[("host", "fs")]))  # mirror what was sent
    http.send(h11.EndOfMessage())
    sock.settimeout(120)
    received = 0
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        http.receive_data(data)
        while (event := _next(http)) is not h11.NEED_DATA:
            if isinstance(event, h11.Data):
                received += len(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return received, True
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return received, False
        if not data:
            return received, False


def _next(http: h11.Connection) -> Any:
    """The next event; the stream ending mid-body (the door cut it) is ConnectionClosed here."""
    try:
        return http.next_event()
    except h11.RemoteProtocolError:
        return h11.ConnectionClosed()


def main() -> None:
    directory, _entries, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    env = os.environ
    with open(env["SHARNESS_BUNDLE"], "rb") as bundle:
        ctx = client_context_from_file(bundle.read(), env["SHARNESS_SVID"])
    report("ready", sid=env["SHARNESS_SESSION"])
    wait_for("stall")
    sockets = stall(ctx, directory, count)
    report("stalled", opened=len(sockets), second_client=whole_listing(directory))
    wait_for("drain")
    ends = []
    for sock in sockets:
        ends.append(read_to_end(sock))
        sock.close()
    report("drained", cut=sum(not complete for _, complete in ends), complete=sum(c for _, c in ends),
           most_body_bytes=max(received for received, _ in ends))
    report("after", second_client=whole_listing(directory))


if __name__ == "__main__":
    main()
