"""fs door figures: small-file writes/s and large-file MB/s through the door against direct local writes,
and stats/s of four kept-alive loops with every request audited as in a session against the same unaudited.

The door runs in its own process (mutual TLS over a Unix socket, the real routes and dispatch); the client
is the app's blocking DoorClient on one kept-alive connection. Direct baselines run in this process on the
same file system in the same run: a plain open/write/close, and the same atomic sequence the door does
(temporary file, fsync, rename, fsync of the directory); for large files also the same bytes moved between the
page cache and another process over a Unix socket with no TLS and no HTTP (bench/_fs_direct.py: a door's floor,
beside the in-process baselines, which stay). Each figure comes with CPU per operation of both sides (this
process: time.process_time; the door: /proc/<pid>/stat). As root it also measures what the ownership
options cost (an fchown per write; Landlock on the writer), for docs/decisions/fs.md.

    python -m bench.fs_bench [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import _fs_audited
from bench._certs import CertFiles
from bench._fs_direct import Clock, Timed, socket_read, socket_write, tls_read, tls_write
from bench._fs_scan import scan_figures

RATIOS = (
    ("fs_small_writes_per_s_door", "fs_small_writes_per_s_direct_atomic"),
    ("fs_small_writes_per_s_door", "fs_small_writes_per_s_direct_plain"),
    ("fs_large_write_mb_per_s_door", "fs_large_write_mb_per_s_direct"),
    ("fs_large_write_mb_per_s_door", "fs_large_write_mb_per_s_direct_socket"),
    ("fs_large_write_mb_per_s_door", "fs_large_write_mb_per_s_direct_tls"),
    ("fs_large_write_mb_per_s_direct_tls", "fs_large_write_mb_per_s_direct"),
    ("fs_large_read_mb_per_s_door", "fs_large_read_mb_per_s_direct"),
    ("fs_large_read_mb_per_s_door", "fs_large_read_mb_per_s_direct_socket"),
    ("fs_large_read_mb_per_s_door", "fs_large_read_mb_per_s_direct_tls"),
    ("fs_large_read_mb_per_s_direct_tls", "fs_large_read_mb_per_s_direct"),
    ("fs_stat_per_s_audited", "fs_stat_per_s_unaudited"),
)
SMALL_BYTES = 4096
MB = 1024 * 1024


def _serve(directory: str, workspace: str) -> None:
    """The door process: serve the fs routes over mTLS on DIR/fs.sock until killed."""
    import trio

    from doors import Router, serve_mtls, server_context_from_file, unix_listener
    from doors.fs import build
    from doors.fs.server import FS_LIMITS
    from pki.edges import EdgePolicy
    from pki.spiffe import SessionIdentity
    from pki.vocabulary import DEFAULT_EDGES

    with open(os.path.join(directory, "meta.json")) as source:
        meta = json.load(source)
    rows = {"workspace": workspace, "max_file_bytes": 1 << 40, "max_total_bytes": 1 << 50, "max_files": 1 << 40}
    api = build(rows, lambda event: None)
    with open(os.path.join(directory, "bundle.pem"), "rb") as source:
        bundle = source.read()
    ctx = server_context_from_file(bundle, os.path.join(directory, "fs.svid.pem"))
    identity = SessionIdentity(meta["trust_domain"], meta["session_id"], "fs")
    listener = unix_listener(os.path.join(directory, "fs.sock"))
    serve = functools.partial(serve_mtls, [listener], ctx, identity, EdgePolicy(DEFAULT_EDGES),
                              Router("fs", api.routes()), lambda event: None,
                              limits=dataclasses.replace(FS_LIMITS, idle_timeout_s=600))
    trio.run(serve)


class _DoorProcess:
    """A door process and a kept-alive app client to it."""

    def __init__(self, directory: str, workspace: str) -> None:
        from doors.client import DoorClient
        from pki.testing import SessionPKI

        pki = SessionPKI.create()
        with open(os.path.join(directory, "meta.json"), "w") as out:
            json.dump({"trust_domain": pki.trust_domain, "session_id": pki.session_id}, out)
        bundle = os.path.join(directory, "bundle.pem")
        with open(bundle, "wb") as out:
            out.write(pki.bundle_pem())
        pki.write_svid("fs", directory)
        app_svid = pki.write_svid("app", directory)
        fs_svid = os.path.join(directory, "fs.svid.pem")
        self.fs_files = CertFiles(Path(fs_svid), Path(fs_svid), Path(bundle))
        self.app_files = CertFiles(Path(app_svid), Path(app_svid), Path(bundle))
        self.process = subprocess.Popen([sys.executable, "-m", "bench.fs_bench", "--serve", directory, workspace],
                                        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        socket_path = os.path.join(directory, "fs.sock")
        deadline = time.monotonic() + 30
        while not os.path.exists(socket_path):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the bench's fs door did not start")
            time.sleep(0.02)
        self.client = DoorClient.from_files("fs", socket_path, app_svid, bundle, pki.trust_domain,
                                            pki.session_id, client_role="app", timeout_s=300)
        self.address = _fs_audited.DoorAddress(socket_path, app_svid, bundle, pki.trust_domain, pki.session_id)

    def close(self) -> None:
        self.client.close()
        self.process.kill()
        self.process.wait()


def _rate(count: int, action: Callable[[int], None], door_pid: int) -> tuple[float, Timed]:
    with Clock(door_pid) as clock:
        for number in range(count):
            action(number)
    return count / clock.timed.wall_s, clock.timed


def _direct_plain(directory: str, payload: bytes, number: int) -> None:
    with open(os.path.join(directory, f"p{number}"), "wb") as out:
        out.write(payload)


def _direct_atomic(directory: str, payload: bytes, number: int) -> None:
    temp = os.path.join(directory, f".t{number}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, os.path.join(directory, f"a{number}"))
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _through_door(door: _DoorProcess, payload: bytes, number: int) -> None:
    response = door.client.request("PUT", f"/v0/fs/files/d{number}", body=payload)
    if response.status != 201:
        raise RuntimeError(f"the door refused a bench write: {response.status} {response.body[:200]!r}")


def _timed(door_pid: int, action: Callable[[], None]) -> Timed:
    with Clock(door_pid) as clock:
        action()
    return clock.timed


def _large(root: str, door: _DoorProcess, size: int) -> dict[str, float]:
    """MB/s of each way to write and read `size` bytes, and CPU ms per MiB of this process and the other side
    (the door, or the direct socket baseline's child)."""
    payload = os.urandom(size)
    direct_path = os.path.join(root, "direct", "large")
    socket_path = os.path.join(root, "direct", "large-socket")
    tls_path = os.path.join(root, "direct", "large-tls")

    def direct_write() -> None:
        with open(direct_path, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())

    def door_write() -> None:
        if door.client.request("PUT", "/v0/fs/files/large", body=payload).status not in (200, 201):
            raise RuntimeError("the door refused the large bench write")

    def direct_read() -> None:
        with open(direct_path, "rb") as source:
            source.read()

    def door_read() -> None:
        if len(door.client.request("GET", "/v0/fs/files/large").body) != size:
            raise RuntimeError("the door returned a short read")

    pid = door.process.pid
    timed = {
        "write_mb_per_s_direct": _timed(pid, direct_write),
        "write_mb_per_s_direct_socket": socket_write(socket_path, payload),
        "write_mb_per_s_direct_tls": tls_write(tls_path, payload, door.fs_files, door.app_files),
        "write_mb_per_s_door": _timed(pid, door_write),
        "read_mb_per_s_direct": _timed(pid, direct_read),
        "read_mb_per_s_direct_socket": socket_read(socket_path, size),
        "read_mb_per_s_direct_tls": tls_read(direct_path, size, door.fs_files, door.app_files),
        "read_mb_per_s_door": _timed(pid, door_read),
    }
    mib = size / MB
    figures = {f"fs_large_{name}": round(mib / one.wall_s, 1) for name, one in timed.items()}
    for way in ("write", "read"):
        door_timed, socket_timed = timed[f"{way}_mb_per_s_door"], timed[f"{way}_mb_per_s_direct_socket"]
        figures[f"fs_large_{way}_cpu_ms_per_mb_door"] = round(door_timed.other_cpu_s * 1e3 / mib, 2)
        figures[f"fs_large_{way}_cpu_ms_per_mb_door_client"] = round(door_timed.cpu_s * 1e3 / mib, 2)
        figures[f"fs_large_{way}_cpu_ms_per_mb_direct"] = round(timed[f"{way}_mb_per_s_direct"].cpu_s * 1e3 / mib, 2)
        figures[f"fs_large_{way}_cpu_ms_per_mb_socket"] = round(
            (socket_timed.cpu_s + socket_timed.other_cpu_s) * 1e3 / mib, 2)
        tls_timed = timed[f"{way}_mb_per_s_direct_tls"]
        figures[f"fs_large_{way}_cpu_ms_per_mb_tls"] = round((tls_timed.cpu_s + tls_timed.other_cpu_s) * 1e3 / mib, 2)
    return figures


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _offset(action: Callable[[int], None], base: int, number: int) -> None:
    action(base + number)


def _small(root: str, door: _DoorProcess, count: int, rounds: int) -> dict[str, Any]:
    """Writes per second of each method, as the median of `rounds` interleaved rounds (fsync times wander), and
    CPU µs per write of the door, its client and the direct atomic writer (medians too)."""
    payload = os.urandom(SMALL_BYTES)
    direct = os.path.join(root, "direct")
    methods = {
        "fs_small_writes_per_s_direct_plain": functools.partial(_direct_plain, direct, payload),
        "fs_small_writes_per_s_direct_atomic": functools.partial(_direct_atomic, direct, payload),
        "fs_small_writes_per_s_door": functools.partial(_through_door, door, payload),
    }
    rates: dict[str, list[float]] = {name: [] for name in methods}
    cpu: dict[str, list[float]] = {"door": [], "door_client": [], "direct_atomic": []}
    per_round = max(1, count // rounds)
    for round_number in range(rounds):
        order = list(methods)[round_number % 3:] + list(methods)[: round_number % 3]
        for name in order:
            base = round_number * per_round
            rate, timed = _rate(per_round, functools.partial(_offset, methods[name], base), door.process.pid)
            rates[name].append(rate)
            if name.endswith("_door"):
                cpu["door"].append(timed.other_cpu_s * 1e6 / per_round)
                cpu["door_client"].append(timed.cpu_s * 1e6 / per_round)
            elif name.endswith("_atomic"):
                cpu["direct_atomic"].append(timed.cpu_s * 1e6 / per_round)
    figures: dict[str, Any] = {name: round(_median(values)) for name, values in rates.items()}
    figures.update({f"fs_small_write_cpu_us_{side}": round(_median(values)) for side, values in cpu.items()})
    return figures


def _stat_rates(root: str, door: _DoorProcess, per_loop: int) -> dict[str, Any]:
    """Stats/s of four loops: audited as in a session (the real door, Supervisor, AuditLog), and unaudited."""
    for workspace in (os.path.join(root, "workspace"), os.path.join(root, "audited", "workspace")):
        os.makedirs(workspace, exist_ok=True)
        with open(os.path.join(workspace, "seed"), "wb") as out:
            out.write(b"seed\n")
    unaudited = _fs_audited.unaudited_rate(door.address, per_loop)
    audited = _fs_audited.audited(os.path.join(root, "audited"), os.path.join(root, "audited", "workspace"), per_loop)
    return {
        "fs_stat_loops": _fs_audited.LOOPS,
        "fs_stat_per_loop": per_loop,
        "fs_stat_per_s_unaudited": round(unaudited),
        "fs_stat_per_s_audited": round(audited["rate"]),
        "fs_stat_audited_503": audited["refused_503"],
        "fs_stat_audited_lost": audited["lost"],
        "fs_audit_lines_per_commit": round(audited["lines_per_commit"], 1),
    }


def run(quick: bool) -> dict[str, Any]:
    """The fs figures (flat keys, `fs_` prefix), with ratios door/direct."""
    small_count, rounds = (300, 3) if quick else (3000, 5)
    large_size = (16 if quick else 48) * MB  # the blocking client takes responses up to 64 MiB
    root = tempfile.mkdtemp(prefix="sharness-fs-bench-")
    door: _DoorProcess | None = None
    try:
        for name in ("direct", "workspace", "door"):
            os.mkdir(os.path.join(root, name))
        door = _DoorProcess(os.path.join(root, "door"), os.path.join(root, "workspace"))
        figures: dict[str, Any] = {"fs_small_file_bytes": SMALL_BYTES, "fs_small_writes_count": small_count,
                                   "fs_large_file_mb": large_size // MB}
        figures.update(_small(root, door, small_count, rounds))
        large = [_large(root, door, large_size) for _ in range(rounds)]
        figures.update({key: _median([sample[key] for sample in large]) for key in large[0]})
        figures.update(_stat_rates(root, door, 1000 if quick else 5000))
        figures.update(scan_figures(large_size))
        for figure, baseline in RATIOS:
            name = f"{figure}_over_{baseline.rsplit('_', 1)[-1]}_ratio"
            figures[name] = round(figures[figure] / figures[baseline], 3)
        if os.geteuid() == 0:
            figures.update(measure_ownership(os.path.join(root, "own"), 200 if quick else 1000))
        return figures
    finally:
        if door is not None:
            door.close()
        shutil.rmtree(root, ignore_errors=True)

OWNER_UID = 61234  # a numeric uid no account uses: the "workspace owner" of the ownership measurement


def _per_call_us(count: int, action: Callable[[], None]) -> float:
    """The median over 5 batches of microseconds per call (CPU-bound: no journal, no fsync)."""
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            action()
        samples.append((time.perf_counter() - start) / count * 1e6)
    return _median(samples)


def _resolve_us(directory: str, count: int) -> float:
    """Microseconds per openat2 resolution of a 4-level path beneath the workspace fd (+ close)."""
    from doors.fs import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2

    root_fd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
    flags = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
    return _per_call_us(count, lambda: os.close(openat2(root_fd, "a/b/c/file", os.O_PATH, 0, flags)))


def _in_child(directory: str, count: int, *, landlock: bool) -> float:
    """Measure `_resolve_us` in a forked child as the owner uid, with or without Landlock."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: confine, measure, report, exit without running the parent's cleanups
        try:
            os.close(read_fd)
            if landlock:
                from launcher.kernel.landlock import LandlockRules, apply_landlock

                project = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
                apply_landlock(LandlockRules(read=("/usr", "/proc", sys.prefix, project), write=(directory,)), 7)
            os.setgroups([])
            os.setgid(OWNER_UID)
            os.setuid(OWNER_UID)
            os.write(write_fd, json.dumps(_resolve_us(directory, count)).encode())
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as reader:
        result = reader.read()
    os.waitpid(pid, 0)
    if not result:
        raise RuntimeError("the ownership measurement child failed")
    return float(json.loads(result))


def measure_ownership(root: str, count: int) -> dict[str, float]:
    """What the ownership options add per operation (root only; see docs/decisions/fs.md).

    (b) adds an fchown to every created file; (a) adds Landlock to every path resolution.
    """
    os.makedirs(os.path.join(root, "a", "b", "c"))
    with open(os.path.join(root, "a", "b", "c", "file"), "wb"):
        pass
    for directory, _, files in os.walk(root):
        for name in (directory, *(os.path.join(directory, f) for f in files)):
            os.chown(name, OWNER_UID, OWNER_UID)
    os.chmod(os.path.dirname(root), 0o711)  # the owner uid must reach its directory
    fd = os.open(os.path.join(root, "a", "b", "c", "file"), os.O_RDONLY)
    try:
        fchown = _per_call_us(count * 10, lambda: os.fchown(fd, OWNER_UID, OWNER_UID))
    finally:
        os.close(fd)
    plain = _in_child(root, count * 10, landlock=False)
    fenced = _in_child(root, count * 10, landlock=True)
    return {
        "fs_own_fchown_us": round(fchown, 2),
        "fs_own_resolve_us_owner_uid": round(plain, 2),
        "fs_own_resolve_us_owner_uid_landlock": round(fenced, 2),
        "fs_own_landlock_resolve_overhead_ratio": round(fenced / plain, 3),
    }


def _table(figures: dict[str, Any]) -> str:
    width = max(len(key) for key in figures)
    return "\n".join(f"{key:<{width}}  {value}" for key, value in figures.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fs_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve", nargs=2, metavar=("DIR", "WORKSPACE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        _serve(*args.serve)
        return 0
    figures = run(args.quick)
    print(json.dumps(figures, indent=1))
    print(_table(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
