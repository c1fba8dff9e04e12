"""Run as the app: hold the fs door's disk and slots with uploads it never finishes.

Protocol (one line each way per step; argv: the quota in bytes and the upload cap the test expects):
  `capped`   40 connections each PUT a 1 MiB body and send 300 KiB of it, then stall. Once all but the cap
             have an answer, it reports what they said and how many are still open.
  `abort`    it closes every connection (the door must give back what they held) and reports `aborted`.
  `quota`    8 chunked PUTs (no declared size) of 900 KiB each, then stall: together far past the quota.
             Once as many have an answer as cannot fit, it reports them.
  `abort`    as above.
  `write`    four whole 1 MiB files (the quota exactly, if nothing is still held) and one byte more.
Standard library, h11 and the project's clients: it runs inside the confinement.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import ssl
import sys
from collections import Counter
from typing import Any

import h11

from doors._transport._tls import client_context_from_file
from doors.client import Dial, DoorClient, connect_door

MIB, KIB = 1024 * 1024, 1024
CAPPED_UPLOADS, CAPPED_SENT = 40, 300 * KIB
QUOTA_UPLOADS, QUOTA_SENT = 8, 900 * KIB


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"uploads_app: expected {word!r} on stdin, got {line!r}")


class Unfinished:
    """One connection to the fs door with a PUT whose body stops short."""

    def __init__(self, ctx: Any, name: str, declared: int | None) -> None:
        env = os.environ
        self.sock = connect_door(Dial("fs", env["SHARNESS_DOOR_FS"], ctx, env["SHARNESS_TRUST_DOMAIN"],
                                      env["SHARNESS_SESSION"], "app"))
        self.http = h11.Connection(h11.CLIENT)
        framing = ("transfer-encoding", "chunked") if declared is None else ("content-length", str(declared))
        self.head = self.http.send(h11.Request(method="PUT", target=f"/v0/fs/files/{name}",
                                               headers=[("host", "fs"), framing])) or b""
        self.answer: tuple[int, str] | None = None

    def send(self, size: int) -> None:
        data = self.head + (self.http.send(h11.Data(data=b"u" * size)) or b"")
        with contextlib.suppress(OSError):  # the door answered and closed before taking it all: read the answer
            self.sock.sendall(data)

    def readable(self) -> bool:
        return bool(self.sock.pending()) or bool(select.select([self.sock.fileno()], [], [], 0)[0])

    def read(self) -> None:
        """Take what arrived without blocking (a readable socket may hold only TLS session tickets)."""
        self.sock.settimeout(0)
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, ssl.SSLWantReadError):
            return
        finally:
            self.sock.settimeout(30)
        self.http.receive_data(data)
        status, body = 0, b""
        while (event := self.http.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                self.answer = (status, json.loads(body)["error"] if body else "closed")
                return

    def close(self) -> None:
        self.sock.close()


def stall(ctx: Any, count: int, declared: int | None, sent: int, answers_wanted: int) -> list[Unfinished]:
    """`count` uploads sending `sent` bytes each; back once `answers_wanted` of them have an answer."""
    uploads = []
    for index in range(count):
        upload = Unfinished(ctx, f"upload-{declared}-{index}", declared)
        upload.send(sent)
        uploads.append(upload)
    while sum(u.answer is not None for u in uploads) < answers_wanted:
        waiting = [u for u in uploads if u.answer is None]
        ready = [u for u in waiting if u.sock.pending()]
        if not ready:
            select.select([u.sock.fileno() for u in waiting], [], [])
            ready = [u for u in waiting if u.readable()]
        for upload in ready:
            upload.read()
    return uploads


def outcome(uploads: list[Unfinished]) -> dict[str, Any]:
    answers = Counter(f"{u.answer[0]} {u.answer[1]}" for u in uploads if u.answer is not None)
    return {"answers": dict(answers), "open": sum(u.answer is None for u in uploads)}


def abort(uploads: list[Unfinished]) -> None:
    for upload in uploads:
        upload.close()
    report("aborted")


def write_the_quota() -> None:
    statuses = []
    with DoorClient.from_env("fs") as fs:
        for index in range(5):
            answer = fs.request("PUT", f"/v0/fs/files/whole-{index}", body=b"w" * (MIB if index < 4 else 1))
            statuses.append([answer.status, "" if answer.ok else answer.json()["error"]])
    report("written", statuses=statuses)


def main() -> None:
    quota, cap = int(sys.argv[1]), int(sys.argv[2])
    env = os.environ
    with open(env["SHARNESS_BUNDLE"], "rb") as bundle:
        ctx = client_context_from_file(bundle.read(), env["SHARNESS_SVID"])
    report("ready", sid=env["SHARNESS_SESSION"])
    wait_for("capped")
    uploads = stall(ctx, CAPPED_UPLOADS, MIB, CAPPED_SENT, CAPPED_UPLOADS - cap)
    report("capped", **outcome(uploads))
    wait_for("abort")
    abort(uploads)
    wait_for("quota")
    cannot_fit = QUOTA_UPLOADS - quota // QUOTA_SENT
    uploads = stall(ctx, QUOTA_UPLOADS, None, QUOTA_SENT, cannot_fit)
    report("quota", **outcome(uploads), cannot_fit=cannot_fit)
    wait_for("abort")
    abort(uploads)
    wait_for("write")
    write_the_quota()


if __name__ == "__main__":
    main()
