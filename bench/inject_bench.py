"""Bound credentials: what terminating TLS and injecting costs against the same request tunnelled, in one run.

The network of bench/net_bench.py (its own namespaces, removed at the end): one HTTPS upstream in `wan` answering
HTTP/1.1 under two names, `tunnel.sharness.test` (a plain CONNECT tunnel) and `bound.sharness.test` (a bound host:
the door terminates the client's TLS with its egress leaf, verifies the upstream, injects the credential); the
door's proxy in `door` as its own process; the client in `app` as its own process (Python's http.client through
the proxy, the same code for both names). Each injected request has its credential released the way the keys
door does it, minus the Unix-socket round trip (keys_bench measures that): a one-time key pair, HPKE seal, open.

    sudo .venv/bin/python -m bench.inject_bench [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import http.client
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from bench.net_bench import PROXY_PORT, UPSTREAM, network, socket_in, start_in_netns

RATIOS = (("inject_relay_mb_per_s_terminated", "inject_relay_mb_per_s_tunnel"),)
BOUND, TUNNEL, PORT = "bound.sharness.test", "tunnel.sharness.test", 443
TOKEN = b"ghp_bench0123456789abcdefghijklmnopqrstu"
MB = 1024 * 1024
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK = b"\0" * (256 * 1024)


# ---- the upstream (its own process, in wan): HTTP/1.1 keep-alive over TLS, /small and /big/<bytes> ----

def _answer(tls: ssl.SSLSocket, target: str) -> None:
    size = int(target[5:]) if target.startswith("/big/") else 2
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\ncontent-type: application/octet-stream\r\n\r\n" % size
    if not target.startswith("/big/"):
        tls.sendall(head + b"ok")  # one write: no Nagle wait between head and body on either path
        return
    tls.sendall(head)
    while size > 0:
        tls.sendall(CHUNK[: min(size, len(CHUNK))])
        size -= len(CHUNK)


def _serve_one(conn: socket.socket, context: ssl.SSLContext) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
        pending = b""
        while True:
            while b"\r\n\r\n" not in pending:
                data = tls.recv(65536)
                if not data:
                    return
                pending += data
            head, _, pending = pending.partition(b"\r\n\r\n")
            _answer(tls, head.split(b" ", 2)[1].decode())


def serve_upstream(cert_dir: str) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.path.join(cert_dir, "upstream.pem"))
    sock = socket.create_server((UPSTREAM, PORT), backlog=128)
    print("ready", flush=True)
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=_serve_one, args=(conn, context), daemon=True).start()


# ---- the door's proxy (its own process, in door) ----

def _egress(cert_dir: str) -> dict[str, ssl.SSLContext]:
    """An egress CA for the bound name (its PEM left for the client), the door's server contexts."""
    from cryptography.hazmat.primitives import serialization

    from doors.net import contexts_from_pems
    from pki.egress import issue_host_leaf, leaves_pem, new_egress_ca, split_leaves

    now = dt.datetime.now(dt.UTC)
    key, ca = new_egress_ca((BOUND,), 3600, now)
    with open(os.path.join(cert_dir, "egress-ca.pem"), "wb") as out:
        out.write(ca.public_bytes(serialization.Encoding.PEM))
    return contexts_from_pems(split_leaves(leaves_pem({BOUND: issue_host_leaf(key, ca, BOUND, now, 3600)})))


async def _release(name: str, host: str) -> bytes:
    """The keys door's crypto for one release (one-time key, seal, open), in process."""
    from doors.keys import Binding, OneTimeKey, seal

    one_time = OneTimeKey()
    binding = Binding("spiffe://bench/net", name, host, "bench-request-id-0000", int(time.time()) + 30)
    return one_time.open(seal(TOKEN, one_time.public_bytes(), binding), binding)


def serve_proxy(listen_fd: int, cert_dir: str) -> None:
    import ipaddress

    import trio

    from doors.net import ALPN, AddressPolicy, Allowlist, EgressConfig, Injection, Proxy, ProxyConfig

    class StaticResolver:
        async def resolve(self, name: str) -> list[Any]:
            await trio.lowlevel.checkpoint()
            return [ipaddress.ip_address(UPSTREAM)]

    upstream = ssl.create_default_context(cafile=os.path.join(cert_dir, "upstream-ca.pem"))
    upstream.set_alpn_protocols(ALPN)
    injection = Injection.from_rows([{"host": f"{BOUND}:{PORT}", "secret": "bench", "format": "bearer"}])
    allow = Allowlist.from_rows({"app": [f"{BOUND}:{PORT}", f"{TUNNEL}:{PORT}"]})
    config = ProxyConfig(allow, AddressPolicy(test_internet=(ipaddress.ip_network("198.51.100.0/24"),)),
                         egress=EgressConfig(injection, _egress(cert_dir), upstream))
    proxy = Proxy(config, lambda event: None, StaticResolver(), credentials=_release)
    sock = socket.socket(fileno=listen_fd)
    sock.setblocking(False)
    print("ready", flush=True)
    trio.run(proxy.serve, trio.SocketListener(trio.socket.from_stdlib_socket(sock)), "app")


# ---- the client (its own process, in app) ----

def _connection(host: str, cert_dir: str) -> http.client.HTTPSConnection:
    ca = "egress-ca.pem" if host == BOUND else "upstream-ca.pem"
    context = ssl.create_default_context(cafile=os.path.join(cert_dir, ca))
    conn = http.client.HTTPSConnection("127.0.0.1", PROXY_PORT, context=context)
    conn.set_tunnel(host, PORT)
    return conn


def _get(conn: http.client.HTTPSConnection, path: str, buf: memoryview | None = None) -> int:
    conn.request("GET", path)
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"GET {path}: {response.status} {response.read()[:300]!r}")
    if buf is None:
        return len(response.read())
    got = 0
    while n := response.readinto(buf):
        got += n
    return got


def _fresh_ms(host: str, cert_dir: str) -> float:
    """CONNECT, TLS, one small GET, on a new connection."""
    start = time.perf_counter()
    conn = _connection(host, cert_dir)
    _get(conn, "/small")
    conn.close()
    return (time.perf_counter() - start) * 1000


def _kept_ms(conn: http.client.HTTPSConnection) -> float:
    start = time.perf_counter()
    _get(conn, "/small")
    return (time.perf_counter() - start) * 1000


def _cpu_s(pid: int) -> float:
    """User plus system CPU seconds of process `pid` so far (load-independent, unlike wall time)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _door_cpu_ms_per_request(conn: http.client.HTTPSConnection, requests: int, door_pid: int) -> float:
    """The door's CPU per small request on a kept connection (what it adds on an idle core)."""
    cpu = _cpu_s(door_pid)
    for _ in range(requests):
        _get(conn, "/small")
    return (_cpu_s(door_pid) - cpu) * 1000 / requests


def _relay(host: str, cert_dir: str, total: int, door_pid: int) -> tuple[float, float]:
    """(MB/s, the door's CPU ms per MB) for one download of `total` bytes."""
    buf = memoryview(bytearray(1024 * 1024))
    conn = _connection(host, cert_dir)
    cpu, start = _cpu_s(door_pid), time.perf_counter()
    got = _get(conn, f"/big/{total}", buf)
    elapsed, cpu = time.perf_counter() - start, _cpu_s(door_pid) - cpu
    conn.close()
    if got != total:
        raise RuntimeError(f"{host}: {got} of {total} bytes")
    return total / MB / elapsed, cpu * 1000 / (total / MB)


def client(cert_dir: str, quick: bool, door_pid: int) -> dict[str, Any]:
    rounds, requests, total = (2, 40, 64 * MB) if quick else (3, 300, 256 * MB)
    fresh: dict[str, list[float]] = {TUNNEL: [], BOUND: []}
    kept: dict[str, list[float]] = {TUNNEL: [], BOUND: []}
    held = {host: _connection(host, cert_dir) for host in kept}
    for conn in held.values():
        _get(conn, "/small")  # the handshake out of the way: what follows is one request on a kept connection
    for _ in range(requests):  # interleaved, so drift hits both alike
        for host in (TUNNEL, BOUND):
            fresh[host].append(_fresh_ms(host, cert_dir))
            kept[host].append(_kept_ms(held[host]))
    per_request = {host: _door_cpu_ms_per_request(held[host], requests, door_pid) for host in (TUNNEL, BOUND)}
    runs = {host: [_relay(host, cert_dir, total, door_pid) for _ in range(rounds)] for host in (TUNNEL, BOUND)}
    relay = {host: max(rate for rate, _ in found) for host, found in runs.items()}
    door_cpu = {host: min(cpu for _, cpu in found) for host, found in runs.items()}
    p50 = {kind: {host: statistics.median(values) for host, values in series.items()}
           for kind, series in (("fresh", fresh), ("kept", kept))}
    return {
        "inject_request_ms_tunnel_p50": round(p50["fresh"][TUNNEL], 3),
        "inject_request_ms_terminated_p50": round(p50["fresh"][BOUND], 3),
        "inject_added_ms_p50": round(p50["fresh"][BOUND] - p50["fresh"][TUNNEL], 3),
        "inject_kept_request_ms_tunnel_p50": round(p50["kept"][TUNNEL], 3),
        "inject_kept_request_ms_terminated_p50": round(p50["kept"][BOUND], 3),
        "inject_kept_added_ms_p50": round(p50["kept"][BOUND] - p50["kept"][TUNNEL], 3),
        "inject_relay_mb_per_s_tunnel": round(relay[TUNNEL], 1),
        "inject_relay_mb_per_s_terminated": round(relay[BOUND], 1),
        "inject_relay_ratio": round(relay[BOUND] / relay[TUNNEL], 3),
        # The door's own CPU per MB relayed: what bounds it on a core of its own, whatever else runs.
        "inject_door_cpu_ms_per_mb_tunnel": round(door_cpu[TUNNEL], 3),
        "inject_door_cpu_ms_per_mb_terminated": round(door_cpu[BOUND], 3),
        "inject_door_bound_mb_per_s_terminated": round(1000 / door_cpu[BOUND], 1) if door_cpu[BOUND] else None,
        "inject_door_cpu_ms_per_request_tunnel": round(per_request[TUNNEL], 3),
        "inject_door_cpu_ms_per_request_terminated": round(per_request[BOUND], 3),
        "inject_relay_bytes": total,
        "samples": {"inject: CONNECT+TLS+1 GET, new connection (ms)": {"tunnel": fresh[TUNNEL],
                                                                        "terminated+injected": fresh[BOUND]}},
    }


def run(quick: bool) -> dict[str, Any]:
    """The figures (see RATIOS); needs root for the namespaces."""
    if os.geteuid() != 0:
        return {"inject_skipped": "needs root to make its network namespaces"}
    import trustme

    ca = trustme.CA()
    processes: list[subprocess.Popen[bytes]] = []
    with network() as names, tempfile.TemporaryDirectory(prefix="sharness-bench-inject-") as cert_dir:
        leaf = ca.issue_cert(BOUND, TUNNEL).private_key_and_cert_chain_pem
        leaf.write_to_path(os.path.join(cert_dir, "upstream.pem"))
        ca.cert_pem.write_to_path(os.path.join(cert_dir, "upstream-ca.pem"))
        listener = socket_in(names["app"])
        listener.bind(("127.0.0.1", PROXY_PORT))
        listener.listen(128)
        try:
            processes.append(start_in_netns("bench.inject_bench", ["--serve-upstream", cert_dir], names["wan"]))
            serve_proxy = ["--serve-proxy", str(listener.fileno()), cert_dir]
            processes.append(start_in_netns("bench.inject_bench", serve_proxy, names["door"],
                                            pass_fds=(listener.fileno(),)))
            listener.close()
            argv = ["ip", "netns", "exec", names["app"], sys.executable, "-m", "bench.inject_bench", "--client",
                    cert_dir, str(processes[-1].pid), *(["--quick"] if quick else [])]
            done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True)
            return dict(json.loads(done.stdout))
        finally:
            for process in processes:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.inject_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve-upstream", metavar="CERT_DIR")
    parser.add_argument("--serve-proxy", nargs=2, metavar=("FD", "CERT_DIR"))
    parser.add_argument("--client", nargs=2, metavar=("CERT_DIR", "DOOR_PID"))
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
    elif args.serve_proxy is not None:
        serve_proxy(int(args.serve_proxy[0]), args.serve_proxy[1])
    elif args.client:
        print(json.dumps(client(args.client[0], args.quick, int(args.client[1]))))
    else:
        result = run(args.quick)
        result.pop("samples", None)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
