"""Run a bench server in its own process and learn its address from its first line."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def server_process(module: str, spec_json: str, address: str) -> Iterator[str]:
    """Start ``python -m module spec_json``; yield the address clients use; kill it afterwards."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", module, spec_json], stdout=subprocess.PIPE, text=True,
                            cwd=REPO, env=env)
    try:
        said = _read_ready(proc, module)
        yield f"tcp:{said}" if address.startswith("tcp:") else address
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
