"""A probe app for the net door's session tests: runs confined as the app and reports what happened.

It judges nothing: each attempt prints one JSON line ({"probe": name, ...what was observed}) and the test
decides whether the refusal came from where it should. Standard library only: it runs inside the confinement.

    net_probe.py kernel              direct egress (curl --noproxy, raw sockets, UDP) and the proxy control
    net_probe.py proxy HOST...       requests through the proxy listener (see PROXY_PROBES)
    net_probe.py no-edge             what an app without the edge app→net can reach, then waits for the
                                     test to look into its network namespace ($TMPDIR/sharness-go ends it)
"""

from __future__ import annotations

import ctypes
import errno
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable

PROXY = ("127.0.0.1", 3128)
TIMEOUT_S = 20.0
CLONE_NEWNET = 0x40000000
GO_FILE = "sharness-go"
WAIT_S = 120.0


def report(probe: str, **observed: object) -> None:
    print(json.dumps({"probe": probe, **observed}), flush=True)


def errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def try_socket(probe: str, family: int, kind: int, address: tuple[str, int] | None) -> None:
    """socket(), then connect() when an address is given: which step failed, with which errno."""
    try:
        sock = socket.socket(family, kind)
    except OSError as exc:
        report(probe, step="socket", errno=errno_name(exc))
        return
    with sock:
        if address is None:
            report(probe, step="socket", errno=None)
            return
        sock.settimeout(TIMEOUT_S)
        try:
            sock.connect(address)
        except OSError as exc:
            report(probe, step="connect", errno=errno_name(exc))
            return
        report(probe, step="connect", errno=None)


def try_setns() -> None:
    """setns(-1, CLONE_NEWNET): seccomp answers EPERM before the kernel would look at the fd (EBADF)."""
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.setns(-1, CLONE_NEWNET)
    err = ctypes.get_errno() if result == -1 else 0
    report("setns", errno=errno.errorcode.get(err) if result == -1 else None)


def curl(probe: str, *args: str) -> None:
    """Run curl -v with `args`; report its exit code, its connect trace and its error line."""
    done = subprocess.run(["curl", "-sSv", "--max-time", "20", "-o", "/dev/null", *args],
                          capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    trace = [line for line in lines if line.startswith("*") and "onnect" in line]
    report(probe, exit=done.returncode, trace=trace, error=lines[-1] if lines else "")


def ask_proxy(probe: str, request: bytes, method: str) -> None:
    """Send `request` as is to the proxy listener; report status, X-Sharness-Refusal and the JSON body."""
    try:
        sock = socket.create_connection(PROXY, timeout=TIMEOUT_S)
    except OSError as exc:
        report(probe, step="connect", errno=errno_name(exc))
        return
    with sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock, method=method)
        try:
            response.begin()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            report(probe, step="response", error=f"{type(exc).__name__}: {exc}")
            return
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    report(probe, status=response.status, refusal=response.getheader("X-Sharness-Refusal"), body=document,
           headers=sorted(name.lower() for name in response.headers))


def connect_request(authority: str) -> bytes:
    return f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()


def net_hello() -> None:
    """GET /v0/hello on the net door over mTLS (the edge app→net admits the app); report who answered."""
    from doors.client import DoorClient

    try:
        with DoorClient.from_env("net") as client:
            reply = client.hello()
    except Exception as exc:  # any failure of the allowed path is what the test must see
        report("net.hello", error=f"{type(exc).__name__}: {exc}")
        return
    report("net.hello", role=reply.get("role"), spiffe_id=reply.get("spiffe_id"))


def kernel_probes() -> None:
    """Egress that does not go through the door: each must fail in the kernel, before any packet leaves."""
    curl("curl.noproxy.443", "--noproxy", "*", "https://192.0.2.1/")
    curl("curl.noproxy.3128", "--noproxy", "*", "http://192.0.2.1:3128/")
    try_socket("tcp4.public.443", socket.AF_INET, socket.SOCK_STREAM, ("192.0.2.1", 443))
    try_socket("tcp4.public.3128", socket.AF_INET, socket.SOCK_STREAM, ("192.0.2.1", 3128))
    try_socket("tcp6.public.3128", socket.AF_INET6, socket.SOCK_STREAM, ("2001:db8::1", 3128))
    try_socket("udp4", socket.AF_INET, socket.SOCK_DGRAM, None)
    try_socket("udp6", socket.AF_INET6, socket.SOCK_DGRAM, None)
    try_socket("control.proxy", socket.AF_INET, socket.SOCK_STREAM, PROXY)
    net_hello()
    try_setns()
    report("env", proxy={name: os.environ.get(name) for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")})


PROXY_PROBES: dict[str, Callable[[str], tuple[bytes, str]]] = {
    "connect": lambda host: (connect_request(host), "CONNECT"),
    "get": lambda host: (f"GET http://{host}/secret?token=t0ken HTTP/1.1\r\nHost: {host}\r\n"
                         "Authorization: Bearer hunter2\r\n\r\n".encode(), "GET"),
    "smuggle": lambda host: (f"POST http://{host}/ HTTP/1.1\r\nHost: {host}\r\nContent-Length: 4\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode(), "POST"),
}


def proxy_probes(targets: list[str]) -> None:
    """Each target is KIND=AUTHORITY (KIND in PROXY_PROBES); the probe is named `proxy.KIND.AUTHORITY`."""
    for target in targets:
        kind, _, authority = target.partition("=")
        request, method = PROXY_PROBES[kind](authority)
        ask_proxy(f"proxy.{kind}.{authority}", request, method)
    curl("curl.via_proxy", "https://not-allowed.example/")


def net_door_socket() -> str:
    """The net door's mTLS socket: /run/sharness/<sid>/doors/net.sock, beside the app's private directory (which
    holds its SVID)."""
    private = os.path.dirname(os.environ["SHARNESS_SVID"])
    return os.path.join(os.path.dirname(private), "doors", "net.sock")


def wait_for_go() -> None:
    """Stay alive (so the test can look at this session's namespaces) until the test drops the go file."""
    report("waiting")
    go = os.path.join(os.environ["TMPDIR"], GO_FILE)
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)


def no_edge_probes() -> None:
    """An app without app→net: no INET socket at all, no proxy listener, no net door socket."""
    net_socket = net_door_socket()
    try_socket("tcp4.proxy", socket.AF_INET, socket.SOCK_STREAM, PROXY)
    try_socket("tcp6.proxy", socket.AF_INET6, socket.SOCK_STREAM, ("::1", 3128))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(net_socket)
    except OSError as exc:
        report("unix.net_door", step="connect", errno=errno_name(exc))
    else:
        report("unix.net_door", step="connect", errno=None)
    curl("curl.proxy_port", "--noproxy", "*", "http://127.0.0.1:3128/")
    try_setns()
    report("env", proxy={name: os.environ.get(name) for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
           net_door=os.environ.get("SHARNESS_DOOR_NET"), net_socket=net_socket, sid=os.environ["SHARNESS_SESSION"])
    wait_for_go()


def main(argv: list[str]) -> int:
    mode, rest = argv[0], argv[1:]
    if mode == "kernel":
        kernel_probes()
    elif mode == "proxy":
        proxy_probes(rest)
    elif mode == "no-edge":
        no_edge_probes()
    else:
        print(f"net_probe: unknown mode {mode!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
