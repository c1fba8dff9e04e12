"""Run as the app: start uploads to the fs door and send half of each, then wait (the test kills the door).

Protocol (argv: how many uploads, the size each declares, how much of each to send):
  `stall`  opens the uploads, sends part of each body, reports `stalled`, then reads stdin until it closes.
Standard library, h11 and the project's clients: it runs inside the confinement.
"""

from __future__ import annotations

import json
import os
import sys

import h11

from doors._transport._tls import client_context_from_file
from doors.client import Dial, connect_door


def main() -> None:
    count, declared, sent = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    env = os.environ
    with open(env["SHARNESS_BUNDLE"], "rb") as bundle:
        ctx = client_context_from_file(bundle.read(), env["SHARNESS_SVID"])
    print(json.dumps({"probe": "ready", "sid": env["SHARNESS_SESSION"]}), flush=True)
    if sys.stdin.readline().strip() != "stall":
        raise SystemExit("killed_uploads_app: expected 'stall'")
    sockets = []
    for index in range(count):
        sock = connect_door(Dial("fs", env["SHARNESS_DOOR_FS"], ctx, env["SHARNESS_TRUST_DOMAIN"],
                                 env["SHARNESS_SESSION"], "app"))
        http = h11.Connection(h11.CLIENT)
        head = http.send(h11.Request(method="PUT", target=f"/v0/fs/files/upload-{index}",
                                     headers=[("host", "fs"), ("content-length", str(declared))])) or b""
        sock.sendall(head + (http.send(h11.Data(data=b"k" * sent)) or b""))
        sockets.append(sock)
    print(json.dumps({"probe": "stalled", "uploads": len(sockets)}), flush=True)
    sys.stdin.read()  # until the session ends


if __name__ == "__main__":
    main()
