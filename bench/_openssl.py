"""The C baseline: ``openssl s_server`` answered by ``openssl s_time`` with the same certificates."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench._certs import CertFiles

_COUNT = re.compile(r"(\d+) connections in ([\d.]+)s; ([\d.]+) connections/user sec")
ACCEPT_PAGE = "k"


@dataclass(frozen=True)
class OpensslFigures:
    """What one s_time run gives: connections, wall time, and the client's CPU time."""

    connections: int
    wall_s: float
    client_user_s: float

    def per_handshake_ms(self) -> float:
        return self.wall_s * 1000 / self.connections

    def client_cpu_ms(self) -> float:
        return self.client_user_s * 1000 / self.connections


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, server: subprocess.Popen[bytes], deadline_s: float = 10.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if server.poll() is not None:
            raise RuntimeError(f"bench: openssl s_server exited with {server.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"bench: openssl s_server did not listen on 127.0.0.1:{port} within {deadline_s} s")


def measure(server_files: CertFiles, client_files: CertFiles, workdir: Path, seconds: int) -> OpensslFigures:
    """Run s_server (TLS 1.3, client certificate required) and time fresh handshakes with s_time."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("bench: the openssl command is not installed (apt-get install openssl)")
    (workdir / ACCEPT_PAGE).write_text(ACCEPT_PAGE)
    port = _free_port()
    server_argv = [openssl, "s_server", "-accept", f"127.0.0.1:{port}", "-tls1_3", "-quiet", "-WWW",
                   "-cert", str(server_files.cert), "-key", str(server_files.key),
                   "-CAfile", str(server_files.bundle), "-Verify", "1", "-verify_return_error"]
    client_argv = [openssl, "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-tls1_3",
                   "-time", str(seconds), "-www", f"/{ACCEPT_PAGE}", "-verify", "1",
                   "-cert", str(client_files.cert), "-key", str(client_files.key),
                   "-CAfile", str(client_files.bundle)]
    server = subprocess.Popen(server_argv, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, server)
        start = time.perf_counter()
        done = subprocess.run(client_argv, capture_output=True, text=True, check=True, timeout=seconds + 30)
        wall_s = time.perf_counter() - start
    finally:
        server.kill()
        server.wait()
    found = _COUNT.search(done.stdout)
    if found is None:
        raise RuntimeError(f"bench: could not read s_time's output: {done.stdout[-300:]!r}")
    connections, user_s = int(found.group(1)), float(found.group(2))
    return OpensslFigures(connections=connections, wall_s=wall_s, client_user_s=user_s)
