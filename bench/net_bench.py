"""net door figures: relay throughput through the door against a direct connection in the same run, and
the latency CONNECT plus the door's checks add to a TLS request.

Three network namespaces of its own (`sh-bench-net-<tag>-{door,wan,app}`, removed at the end), like the
tests: the upstream host in `wan` (198.51.100.2, marked as the test internet for this run only), the door's
proxy in `door` as its own process, the client in `app` (through the proxy) or in `door` (direct). Every
process is Python with blocking sockets except the door, so the ratio compares like with like.

    sudo .venv/bin/python -m bench.net_bench [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

from pki.vocabulary import NETNS_ROOT

RATIOS = (("net_relay_mb_per_s_door", "net_relay_mb_per_s_direct"),)
UPSTREAM, DOOR_ADDR = "198.51.100.2", "198.51.100.1"
SOURCE_PORT, TLS_PORT, PROXY_PORT = 9000, 9443, 3128
NAME = "bench.sharness.test"
MB = 1024 * 1024
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- namespaces (setns through cffi; links and addresses with `ip`) ----

def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _setns(fd: int) -> None:
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("int setns(int fd, int nstype);")
    if ffi.dlopen(None).setns(fd, 0x40000000) != 0:
        raise OSError(ffi.errno, "setns failed")


def socket_in(ns: str, family: int = socket.AF_INET) -> socket.socket:
    """A TCP socket made inside netns `ns` (it stays there)."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"{NETNS_ROOT}/{ns}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            return socket.socket(family, socket.SOCK_STREAM)
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


@contextlib.contextmanager
def network() -> Iterator[dict[str, str]]:
    """door <-veth-> wan, and app with loopback only; all removed afterwards."""
    tag = secrets.token_hex(3)
    names = {role: f"sh-bench-net-{tag}-{role}" for role in ("door", "wan", "app")}
    try:
        for ns in names.values():
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        vd, vw = f"sh-bn{tag}d", f"sh-bn{tag}w"
        _ip("link", "add", vd, "netns", names["door"], "type", "veth", "peer", "name", vw, "netns", names["wan"])
        for ns, dev, addr in ((names["door"], vd, DOOR_ADDR), (names["wan"], vw, UPSTREAM)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
        _wait_up(names["door"], vd)
        _wait_up(names["wan"], vw)
        yield names
    finally:
        for ns in names.values():
            if os.path.exists(f"{NETNS_ROOT}/{ns}"):
                _ip("netns", "del", ns)


def _wait_up(ns: str, dev: str) -> None:
    for _ in range(250):
        shown = subprocess.run(["ip", "-n", ns, "-o", "link", "show", "dev", dev], capture_output=True, text=True)
        if "LOWER_UP" in shown.stdout:
            return
        time.sleep(0.02)
    raise RuntimeError(f"{dev} in {ns} did not come up")


# ---- the upstream host (its own process, in wan) ----

def _source(conn: socket.socket) -> None:
    with conn:
        count = int.from_bytes(conn.recv(8), "big")
        chunk = b"\0" * (256 * 1024)
        while count > 0:
            conn.sendall(chunk[: min(count, len(chunk))])
            count -= len(chunk)


def _tls_pong(conn: socket.socket, context: ssl.SSLContext) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
        while tls.recv(64):
            tls.sendall(b"pong")


def _accept_forever(sock: socket.socket, handler: Any, *extra: Any) -> None:
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=handler, args=(conn, *extra), daemon=True).start()


def serve_upstream(cert_dir: str) -> None:
    """Byte source on :9000 (send the 8-byte count asked for) and a TLS ping/pong on :9443."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.path.join(cert_dir, "cert.pem"))
    listeners = []
    for port in (SOURCE_PORT, TLS_PORT):
        sock = socket.create_server((UPSTREAM, port), backlog=128)
        listeners.append(sock)
    threading.Thread(target=_accept_forever, args=(listeners[0], _source), daemon=True).start()
    print("ready", flush=True)
    _accept_forever(listeners[1], _tls_pong, context)


# ---- the door's proxy (its own process, in door) ----

def serve_proxy(listen_fd: int) -> None:
    """The real proxy with a static resolver; 198.51.100.0/24 is the test internet for this run."""
    import ipaddress

    import trio

    from doors.net import AddressPolicy, Allowlist
    from doors.net.proxy import Proxy, ProxyConfig

    class StaticResolver:
        async def resolve(self, name: str) -> list[Any]:
            await trio.lowlevel.checkpoint()
            return [ipaddress.ip_address(UPSTREAM)]

    allow = Allowlist.from_rows({"app": [f"{NAME}:{TLS_PORT}", f"tcp://{NAME}:{SOURCE_PORT}"]})
    config = ProxyConfig(allow, AddressPolicy(test_internet=(ipaddress.ip_network("198.51.100.0/24"),)))
    proxy = Proxy(config, lambda event: None, StaticResolver())
    sock = socket.socket(fileno=listen_fd)
    sock.setblocking(False)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    print("ready", flush=True)
    trio.run(proxy.serve, listener, "app")


# ---- the client (this process) ----

def _connect_via(names: dict[str, str], port: int) -> socket.socket:
    sock = socket_in(names["app"])
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.connect(("127.0.0.1", PROXY_PORT))
    sock.sendall(f"CONNECT {NAME}:{port} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the proxy refused the bench: {head!r}")
    return sock


def _connect_direct(names: dict[str, str], port: int) -> socket.socket:
    sock = socket_in(names["door"])
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.connect((UPSTREAM, port))
    return sock


def _download(sock: socket.socket, total: int) -> float:
    """MB/s receiving `total` bytes."""
    buf = bytearray(1024 * 1024)
    view = memoryview(buf)
    start = time.perf_counter()
    with sock:
        sock.sendall(total.to_bytes(8, "big"))
        got = 0
        while got < total:
            n = sock.recv_into(view)
            if not n:
                raise RuntimeError(f"the stream ended after {got} of {total} bytes")
            got += n
    return total / MB / (time.perf_counter() - start)


def _ping(sock: socket.socket, context: ssl.SSLContext) -> float:
    with context.wrap_socket(sock, server_hostname=NAME) as tls:
        tls.sendall(b"ping")
        if tls.recv(4) != b"pong":
            raise RuntimeError("the TLS upstream did not answer")
    return 0.0


def _request_ms(open_sock: Any, context: ssl.SSLContext) -> float:
    """Milliseconds for TCP connect (+ CONNECT and checks) + TLS handshake + one round trip."""
    start = time.perf_counter()
    _ping(open_sock(), context)
    return (time.perf_counter() - start) * 1000


def _measure(names: dict[str, str], context: ssl.SSLContext, quick: bool) -> dict[str, Any]:
    total = (64 if quick else 512) * MB
    rounds, pings = (2, 40) if quick else (3, 300)
    direct = [_download(_connect_direct(names, SOURCE_PORT), total) for _ in range(rounds)]
    door = [_download(_connect_via(names, SOURCE_PORT), total) for _ in range(rounds)]
    lat_direct, lat_door = [], []
    for _ in range(pings):  # interleaved, so drift hits both alike
        lat_direct.append(_request_ms(lambda: _connect_direct(names, TLS_PORT), context))
        lat_door.append(_request_ms(lambda: _connect_via(names, TLS_PORT), context))
    best_direct, best_door = max(direct), max(door)
    p50_direct, p50_door = statistics.median(lat_direct), statistics.median(lat_door)
    return {
        "net_relay_mb_per_s_direct": round(best_direct, 1),
        "net_relay_mb_per_s_door": round(best_door, 1),
        "net_relay_ratio": round(best_door / best_direct, 3),
        "net_relay_bytes": total,
        "net_tls_request_ms_direct_p50": round(p50_direct, 3),
        "net_tls_request_ms_door_p50": round(p50_door, 3),
        "net_connect_added_ms_p50": round(p50_door - p50_direct, 3),
        "net_connect_added_ms_p90": round(_p90(lat_door) - _p90(lat_direct), 3),
        "samples": {"net: TCP+TLS+1 round trip (ms)": {"direct": lat_direct, "via net door": lat_door}},
    }


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9)]


def start_in_netns(module: str, argv: list[str], ns: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """`python -m module argv` in network namespace `ns`, once it printed "ready" (a bench's helper side)."""
    process = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", module, *argv],
                               cwd=ROOT, stdout=subprocess.PIPE, **kwargs)
    assert process.stdout is not None
    if process.stdout.readline().strip() != b"ready":
        process.kill()
        raise RuntimeError(f"bench helper {argv[0]} did not start")
    return process


def run(quick: bool) -> dict[str, Any]:
    """The figures (see RATIOS); needs root for the namespaces."""
    if os.geteuid() != 0:
        return {"net_skipped": "needs root to make its network namespaces"}
    import trustme

    ca = trustme.CA()
    processes: list[subprocess.Popen[bytes]] = []
    with network() as names, tempfile.TemporaryDirectory(prefix="sharness-bench-net-") as cert_dir:
        ca.issue_cert(NAME).private_key_and_cert_chain_pem.write_to_path(os.path.join(cert_dir, "cert.pem"))
        context = ssl.create_default_context()
        ca.configure_trust(context)
        listener = socket_in(names["app"])
        listener.bind(("127.0.0.1", PROXY_PORT))
        listener.listen(128)
        try:
            processes.append(start_in_netns("bench.net_bench", ["--serve-upstream", cert_dir], names["wan"]))
            processes.append(start_in_netns("bench.net_bench", ["--serve-proxy", str(listener.fileno())], names["door"],
                                            pass_fds=(listener.fileno(),)))
            listener.close()
            return _measure(names, context, quick)
        finally:
            for process in processes:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.net_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve-upstream", metavar="CERT_DIR")
    parser.add_argument("--serve-proxy", metavar="FD", type=int)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
    elif args.serve_proxy is not None:
        serve_proxy(args.serve_proxy)
    else:
        result = run(args.quick)
        result.pop("samples", None)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
