"""The bench's session manifests, and what it reads from a run: the launcher's summary, its marks, the audit
log, `-X importtime`. Pure: no I/O (bench/session_bench.py runs the sessions).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

IMPORTED = "sharness-bench-imported"  # the marked launcher's line: the wall clock once its imports are done
FS_ROWS = {"read_only": [".git"], "refuse_secrets": True, "max_file_bytes": 1 << 20,
           "max_total_bytes": 1 << 24, "max_files": 1000}
FULL_DOORS = {"fs": FS_ROWS, "net": {"allow": {"app": ["pypi.org:443"], "shell": ["pypi.org:443"]}}, "keys": {},
              "shell": {"workspace": "read", "process": {"max_memory_mb": 256, "max_pids": 64}}}
FULL_EDGES = [["app", "fs"], ["app", "net"], ["app", "shell"], ["shell", "net"], ["net", "keys"]]
KIND_DOORS = {"full": (FULL_DOORS, FULL_EDGES), "min": ({"fs": FS_ROWS, "keys": {}}, [["app", "fs"]])}


def manifest(kind: str, workspace: str, argv: Sequence[str]) -> dict[str, Any]:
    """The bench manifest `kind` ("full" or "min") whose app runs `argv`."""
    doors, edges = KIND_DOORS[kind]
    return {"sharness": "manifest/v0", "session": {"name": "bench", "trust_domain": "bench.sharness.test",
                                                    "ttl_s": 600},
            "workspace": workspace,
            "app": {"argv": list(argv), "files": {"read": [], "exec": []},
                    "process": {"max_memory_mb": 256, "max_pids": 64}},
            "doors": doors, "edges": edges}


def summary_of(stdout: str) -> dict[str, Any]:
    """The launcher's --json summary: the JSON object that ends its stdout (the app may print before it)."""
    start = stdout.find("\n{") + 1 if not stdout.startswith("{") else 0
    return dict(json.loads(stdout[start:]))


def ready_split(exec_ns: int, imported_ns: int, app_clock: str, timings: dict[str, float]) -> dict[str, float]:
    """One run's ready time, split: exec → imports done → Session construction → created → every door ready.

    The app's wall clock at its start (`date +%s.%N`) lands at the session's `app_started` mark.
    """
    app_ns = int(app_clock.replace(".", ""))  # nine digits after the point
    ready_ns = app_ns - (timings["app_started"] - timings["doors_ready"]) * 1e6
    return {"imports": (imported_ns - exec_ns) / 1e6, "after_imports": (ready_ns - imported_ns) / 1e6,
            "from_exec": (ready_ns - exec_ns) / 1e6, "pre_session": (app_ns - exec_ns) / 1e6 - timings["app_started"],
            "create": timings["created"], "doors": timings["doors_ready"] - timings["created"]}


def imported_mark(stderr: str) -> int:
    """The wall clock (ns) the marked launcher printed once its imports were done."""
    for line in stderr.splitlines():
        if line.startswith(IMPORTED):
            return int(line.split()[1])
    raise ValueError("the marked launcher printed no import mark")


def door_ready_after_create(audit_lines: Sequence[str], created_ms: float) -> dict[str, float]:
    """Per door: its `door.ready` time in the audit log minus the session's `created` mark (doors fork after it)."""
    ready = {}
    for line in audit_lines:
        record = json.loads(line)
        if record.get("event") == "door.ready":
            ready[str(record["role"])] = float(record["t_ms"]) - created_ms
    return ready


def top_imports(importtime_stderr: str, count: int) -> str:
    """The `count` costliest top-level packages in `-X importtime` output, as "name ms, …"."""
    costs: dict[str, int] = {}
    for line in importtime_stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].strip()
            if "." not in name and name not in ("launcher", "doors", "pki"):
                costs[name] = max(costs.get(name, 0), int(parts[1]))
    ranked = sorted(costs.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{name} {micro / 1000:.0f} ms" for name, micro in ranked)
