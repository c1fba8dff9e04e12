"""A probe app for the upstream-proxy session test: CONNECTs through the net door and reports what it got.

    upstream_probe.py AUTHORITY...   for each: CONNECT at 127.0.0.1:3128, then (on 200) a TLS ClientHello
                                     naming the host; one JSON line each ({"probe", "status", "refusal"})

Standard library only: it runs inside the confinement.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys

PROXY = ("127.0.0.1", 3128)


def client_hello(host: str) -> bytes:
    """The first flight of a TLS client for `host`, made without a socket."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=host)
    with contextlib.suppress(ssl.SSLWantReadError):  # it wants the server's answer: the hello is out
        tls.do_handshake()
    return outgoing.read()


def probe(authority: str) -> dict[str, object]:
    with socket.create_connection(PROXY, timeout=30) as sock:
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            data = sock.recv(4096)
            if not data:
                break
            head += data
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1]) if lines[0] else 0
        refusal = next((line.split(b":", 1)[1].strip().decode() for line in lines
                        if line.lower().startswith(b"x-sharness-refusal:")), "")
        if status == 200:
            sock.sendall(client_hello(authority.rpartition(":")[0]))
            with contextlib.suppress(OSError):
                sock.recv(4096)  # the test proxy answers nothing: wait for it to close
        return {"probe": authority, "status": status, "refusal": refusal}


for target in sys.argv[1:]:
    print(json.dumps(probe(target)), flush=True)
