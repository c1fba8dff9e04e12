"""Run a bench server in its own process and learn its address from its first line."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._stats import summarize

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 30.0


def _read_ready(proc: subprocess.Popen[str], module: str) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    line = proc.stdout.readline() if ready else ""
    words = line.split()
    if len(words) != 2 or words[0] != "ready":
        proc.kill()
        proc.wait()
        raise RuntimeError(f"bench: {module} did not report ready within {READY_TIMEOUT_S} s (said {line!r})")
    return words[1]


@dataclass(frozen=True)
class Server:
    """A running bench server: where clients reach it, and its pid (to read its CPU time)."""

    address: str
    pid: int

    def cpu_s(self) -> float:
        """User + system CPU seconds the server has used so far."""
        with open(f"/proc/{self.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server_process(module: str, spec_json: str, address: str) -> Iterator[Server]:
    """Start ``python -m module spec_json``; yield where to reach it; kill it afterwards."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", module, spec_json], stdout=subprocess.PIPE, text=True,
                            cwd=REPO, env=env)
    try:
        said = _read_ready(proc, module)
        yield Server(f"tcp:{said}" if address.startswith("tcp:") else address, proc.pid)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@dataclass
class Series:
    """Samples of one measurement and the CPU both processes spent on it, per operation."""

    samples: list[float]
    server_cpu_ms: float
    client_cpu_ms: float


def timed(server: Server, warmup: int, measure: Callable[[], list[float]]) -> Series:
    """Run ``measure`` (a client loop against ``server``); drop ``warmup`` samples, count CPU per op."""
    server_before, client_before = server.cpu_s(), time.process_time()
    samples = measure()
    done = len(samples)
    return Series(samples[warmup:], round((server.cpu_s() - server_before) * 1000 / done, 3),
                  round((time.process_time() - client_before) * 1000 / done, 3))


def summary_with_cpu(prefix: str, series: Series) -> dict[str, Any]:
    """The series' percentiles plus ``{prefix}_server_cpu_ms`` and ``{prefix}_client_cpu_ms``."""
    return {**summarize(prefix, series.samples), f"{prefix}_server_cpu_ms": series.server_cpu_ms,
            f"{prefix}_client_cpu_ms": series.client_cpu_ms}
