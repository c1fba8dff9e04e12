"""Facts about the machine a run happened on, and what else was using its CPUs meanwhile."""

from __future__ import annotations

import os
import platform
import shutil
import ssl
import subprocess
import time
from collections.abc import Mapping

from OpenSSL import SSL

Ticks = Mapping[int, tuple[str, int]]  # pid -> (command, utime + stime in clock ticks)


def busiest(before: Ticks, after: Ticks, window_s: float, ticks_per_s: int, skip: int,
            top: int = 5) -> list[dict[str, object]]:
    """The ``top`` processes by CPU percent between two snapshots (pure), leaving out pid ``skip``."""
    rows = []
    for pid, (command, end) in after.items():
        if pid == skip or pid not in before:
            continue
        used = end - before[pid][1]
        if used > 0:
            rows.append({"pid": pid, "command": command, "cpu_pct": round(100 * used / ticks_per_s / window_s, 1)})
    rows.sort(key=lambda row: -float(row["cpu_pct"]))  # type: ignore[arg-type]
    return rows[:top]


def _read_ticks() -> dict[int, tuple[str, int]]:
    ticks: dict[int, tuple[str, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue  # the process ended between listdir and open
        command = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        ticks[int(name)] = (command, int(fields[11]) + int(fields[12]))
    return ticks


def other_load(window_s: float = 0.5) -> dict[str, object]:
    """Load averages and the busiest other processes over a short window."""
    before = _read_ticks()
    time.sleep(window_s)
    after = _read_ticks()
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    return {
        "loadavg": [round(value, 2) for value in os.getloadavg()],
        "busiest_other_processes": busiest(before, after, window_s, ticks_per_s, os.getpid()),
    }


def _openssl_cli_version() -> str:
    openssl = shutil.which("openssl")
    if openssl is None:
        return "not installed"
    return subprocess.run([openssl, "version"], capture_output=True, text=True, check=True).stdout.strip()


def facts() -> dict[str, object]:
    """CPU count, kernel, Python, and the three OpenSSL builds the bench touches."""
    return {
        "cpu_count": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "openssl_stdlib": ssl.OPENSSL_VERSION,
        "openssl_cli": _openssl_cli_version(),
        "openssl_pyopenssl": SSL.OpenSSL_version(SSL.OPENSSL_VERSION).decode(),
    }
