"""Session figures: ready time, end to end with /bin/true, the whole session's PSS, doors by fork or exec.

Every session is real: `sharness-launch run MANIFEST --expect-hash … --best-effort --json` as root, on a manifest
with every door this machine builds ("full": fs, net, keys, shell, five edges; the rows this version has no holder
for run unheld) and on the minimal one ("min": fs + keys), interleaved; bench/_session_records.py holds both and
reads what a run printed. Ready time is split per run: exec → the launcher's imports done (the launcher's own
code, started by `python -c` that prints the wall clock once it has imported) → Session construction →
`created` → every door ready (`timings_ms`; the app, `date +%s.%N`, prints the wall clock at `app_started`).
PSS is read from /proc/PID/smaps_rollup while the app sleeps. Doors by fork or exec: bench._session_doors.
Needs root; everything a run creates is removed, and the run checks it.

    python -m bench.session_bench [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._session_doors import LAUNCHER_MODULES, WAYS, read_pss
from bench._session_records import (
    IMPORTED,
    KIND_DOORS,
    door_ready_after_create,
    imported_mark,
    manifest,
    ready_split,
    summary_of,
    top_imports,
)
from bench._stats import percentile
from pki.vocabulary import NETNS_ROOT, RUN_ROOT, SESSIONS_ROOT

# Issue 18: ready after imports <= 80 ms (both manifests), the launcher's imports <= 150 ms; from exec, their sum.
TARGETS = {"session_target_ready_ms": 80, "session_target_end_to_end_ms": 700, "session_target_pss_mb": 120,
           "session_target_imports_ms": 150, "session_target_from_exec_ms": 230}
RATIOS = (
    ("session_ready_ms", "session_target_ready_ms"),
    ("session_ready_min_after_imports_p50_ms", "session_target_ready_ms"),
    ("session_launcher_imports_p50_ms", "session_target_imports_ms"),
    ("session_ready_full_from_exec_p50_ms", "session_target_from_exec_ms"),
    ("session_ready_min_from_exec_p50_ms", "session_target_from_exec_ms"),
    ("session_end_to_end_ms", "session_target_end_to_end_ms"),
    ("session_end_to_end_ms", "session_python_pass_p50_ms"),
    ("session_end_to_end_ms", "session_bin_true_p50_ms"),
    ("session_end_to_end_min_p50_ms", "session_target_end_to_end_ms"),
    ("session_launcher_imports_p50_ms", "session_python_pass_p50_ms"),
    ("session_pss_mb", "session_target_pss_mb"),
    ("session_door_fork_ready_p50_ms", "session_door_exec_ready_p50_ms"),
    ("session_door_fork_hello_p50_ms", "session_door_exec_hello_p50_ms"),
    ("session_door_fork_marginal_pss_mb", "session_door_exec_marginal_pss_mb"),
    ("session_door_fork_frozen_marginal_pss_mb", "session_door_fork_marginal_pss_mb"),
)
ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = str(Path(sys.executable).parent / "sharness-launch")
# What `run` has imported at module level. The code of a session's own doors is imported inside the session, while
# its CA child mints (launcher/lifecycle/spawn.py, import_door_code): it counts in `create`, after the import mark.
LAUNCHER_IMPORTS = "import " + ", ".join(LAUNCHER_MODULES)
# The launcher's own code with a wall-clock mark once its imports are done (ready runs only).
MARKED_LAUNCHER = (sys.executable, "-c", f"{LAUNCHER_IMPORTS}\nimport sys, time\n"
                   f"print('{IMPORTED}', time.time_ns(), file=sys.stderr, flush=True)\n"
                   "sys.exit(launcher.cli.main(sys.argv[1:]))")
WORKSPACE_OWNER = 65534  # the fs door runs as the workspace owner, never root


@dataclass(frozen=True)
class Counts:
    end_to_end: int  # launcher runs per manifest with /bin/true
    ready: int  # launcher runs per manifest with the clock-printing app
    baseline: int  # runs of each baseline command
    doors: int  # doors started each way


QUICK = Counts(end_to_end=2, ready=1, baseline=3, doors=2)
FULL = Counts(end_to_end=10, ready=5, baseline=20, doors=10)


def _p(samples: Sequence[float], pct: float) -> float:
    return round(percentile(samples, pct), 1)


def _mb(kb: float) -> float:
    return round(kb / 1024, 1)


# -- processes --
def _wall_ms(argv: Sequence[str], **kwargs: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)
    return (time.perf_counter() - start) * 1000, done


def _baseline(argv: Sequence[str], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        elapsed, done = _wall_ms(argv, cwd="/")
        if done.returncode != 0:
            raise RuntimeError(f"bench baseline {argv!r} failed: {done.stderr[-500:]}")
        samples.append(elapsed)
    return samples


def leftovers(sid: str) -> list[str]:
    """Whatever of session `sid` still exists: users, netns, cgroups, runtime directories."""
    prefix = f"sh-{sid}-"
    found = [line.split(":")[0] for line in Path("/etc/passwd").read_text().splitlines() if line.startswith(prefix)]
    found += [line.split(":")[0] for line in Path("/etc/group").read_text().splitlines() if line.startswith(prefix)]
    if os.path.isdir(NETNS_ROOT):
        found += [name for name in os.listdir(NETNS_ROOT) if name.startswith(prefix)]
    paths = [f"/sys/fs/cgroup/{c}/sharness/{sid}" for c in ("memory", "pids", "unified")]
    paths += [f"{RUN_ROOT}/{sid}", f"{SESSIONS_ROOT}/{sid}"]
    return found + [path for path in paths if os.path.exists(path)]


class Bench:
    """A scratch directory (workspace owned by nobody, manifests, audit logs) and the runs made in it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.workspace = os.path.join(root, "workspace")
        self.audit = os.path.join(root, "audit")
        os.mkdir(self.workspace)
        os.mkdir(self.audit)
        os.chmod(root, 0o711)  # the fs door (uid nobody) must reach its workspace
        os.chown(self.workspace, WORKSPACE_OWNER, WORKSPACE_OWNER)
        self.sids: list[str] = []

    def command(self, kind: str, argv: Sequence[str], launcher: Sequence[str] = (LAUNCHER,)) -> list[str]:
        """The launcher's argv for the manifest `kind` whose app runs `argv` (written and hashed here)."""
        from launcher.commands import read_manifest

        path = os.path.join(self.root, f"{kind}-{os.path.basename(argv[0])}.json")
        with open(path, "w") as out:
            json.dump(manifest(kind, self.workspace, argv), out)
        digest = read_manifest(path).sha256
        return [*launcher, "run", path, "--expect-hash", digest, "--best-effort", "--audit-dir", self.audit, "--json"]

    def launch(self, command: list[str]) -> tuple[float, int, subprocess.CompletedProcess[str], dict[str, Any]]:
        """Run one session to its end: wall ms, wall clock at exec (ns), the process, and its summary."""
        exec_ns = time.time_ns()
        elapsed, done = _wall_ms(command, cwd="/")
        try:
            summary = summary_of(done.stdout)
        except ValueError:
            raise RuntimeError(f"the launcher gave no summary (exit {done.returncode}): {done.stderr[-800:]}") from None
        self.sids.append(str(summary["sid"]))
        if summary["exit_code"] != 0:
            raise RuntimeError(f"bench session {summary['sid']} failed: {summary['reason']}: {done.stderr[-800:]}")
        return elapsed, exec_ns, done, summary

    def audit_lines(self, sid: str) -> list[str]:
        path = os.path.join(self.audit, sid, "audit.jsonl")
        return Path(path).read_text().splitlines() if os.path.exists(path) else []


@dataclass
class KindRuns:
    """What the runs of one manifest gave."""

    walls: list[float] = field(default_factory=list)  # end to end, app /bin/true
    cpu: list[float] = field(default_factory=list)  # their CPU ms (user + system, launcher and every child)
    timings: list[dict[str, float]] = field(default_factory=list)  # their `timings_ms`
    parts: dict[str, list[float]] = field(default_factory=dict)  # ready split, app prints the clock
    per_door: dict[str, list[float]] = field(default_factory=dict)  # door.ready after `created`


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _end_to_end(bench: Bench, command: list[str], runs: KindRuns) -> None:
    cpu = _children_cpu_ms()
    elapsed, _, _, summary = bench.launch(command)
    runs.cpu.append(_children_cpu_ms() - cpu)
    runs.walls.append(elapsed)
    runs.timings.append(summary["timings_ms"])


def _ready(bench: Bench, command: list[str], runs: KindRuns) -> None:
    _, exec_ns, done, summary = bench.launch(command)
    timings = summary["timings_ms"]
    for name, value in ready_split(exec_ns, imported_mark(done.stderr), done.stdout.split()[0], timings).items():
        runs.parts.setdefault(name, []).append(value)
    for role, value in door_ready_after_create(bench.audit_lines(summary["sid"]), timings["created"]).items():
        runs.per_door.setdefault(role, []).append(value)


def _rounds(bench: Bench, counts: Counts) -> dict[str, KindRuns]:
    """Both manifests, both kinds of run, interleaved round by round (load from elsewhere hits all alike)."""
    commands = {kind: (bench.command(kind, ["/bin/true"]),
                       bench.command(kind, ["/bin/date", "+%s.%N"], MARKED_LAUNCHER)) for kind in KIND_DOORS}
    runs = {kind: KindRuns() for kind in KIND_DOORS}
    for number in range(max(counts.end_to_end, counts.ready)):
        for kind in sorted(KIND_DOORS, reverse=number % 2 == 1):
            if number < counts.end_to_end:
                _end_to_end(bench, commands[kind][0], runs[kind])
            if number < counts.ready:
                _ready(bench, commands[kind][1], runs[kind])
    return runs


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench: timed out waiting for {what}")
        time.sleep(0.01)


def _session_pids(bench: Bench, launcher_pid: int) -> dict[str, int]:
    """Role → pid of a running session, from its audit log (written from app start on)."""
    names = [name for name in os.listdir(bench.audit) if name not in bench.sids]
    pids = {"launcher": launcher_pid}
    for line in bench.audit_lines(names[0]) if len(names) == 1 else []:
        record = json.loads(line)
        if record.get("event") in ("door.ready", "app.start"):
            pids[str(record.get("role", "app"))] = int(record["pid"])
    if "app" in pids:  # app.start names the app's pid namespace init; the app is its child
        with open(f"/proc/{pids['app']}/task/{pids['app']}/children") as children:
            found = children.read().split()
        if found:
            pids["app_init"], pids["app"] = pids["app"], int(found[0])
    return pids


def _sleeping_pss(bench: Bench) -> dict[str, float]:
    """PSS (MB) of each component and of the whole session while the app sleeps (full manifest)."""
    process = subprocess.Popen(bench.command("full", ["/bin/sleep", "60"]), cwd="/", stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        pids: dict[str, int] = {}

        def app_sleeps() -> bool:
            pids.update(_session_pids(bench, process.pid))
            return "app" in pids and os.path.realpath(f"/proc/{pids['app']}/exe") == os.path.realpath("/bin/sleep")

        _wait_for(app_sleeps, "the bench session's app to start")
        figures = {f"session_pss_mb_{role}": _mb(read_pss(pid)) for role, pid in pids.items()}
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    figures["session_pss_mb"] = round(sum(figures.values()), 1)
    return figures


def _doors(count: int) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Doors by fork and by exec from a helper holding the launcher's imports (bench._session_doors)."""
    done = subprocess.run([sys.executable, "-m", "bench._session_doors", str(count)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"the bench's door helper failed: {done.stderr[-1500:]}")
    raw = json.loads(done.stdout)
    figures: dict[str, Any] = {"session_zygote_pss_mb": _mb(raw["zygote_pss_kb"]), "session_door_each_way_n": count}
    for how in WAYS:
        figures[f"session_door_{how}_ready_p50_ms"] = _p(raw[f"{how}_ready_ms"], 50)
        figures[f"session_door_{how}_hello_p50_ms"] = _p(raw[f"{how}_hello_ms"], 50)
        figures[f"session_door_{how}_pss_mb"] = _mb(percentile(raw[f"{how}_pss_kb"], 50))
        figures[f"session_door_{how}_marginal_pss_mb"] = _mb(percentile(raw[f"{how}_marginal_kb"], 50))
    return figures, {way: raw[f"{way}_ready_ms"] for way in WAYS}


# -- the part --
def _kind_figures(kind: str, runs: KindRuns) -> dict[str, Any]:
    """One manifest's figures: ready split, end to end, and what the launcher does after teardown."""
    prefix = f"session_{kind}"
    walls, timings, parts = runs.walls, runs.timings, runs.parts
    torn_down = percentile([t["torn_down"] for t in timings], 50)
    figures: dict[str, Any] = {
        f"session_ready_{kind}_after_imports_p50_ms": _p(parts["after_imports"], 50),
        f"session_ready_{kind}_after_imports_p90_ms": _p(parts["after_imports"], 90),
        f"session_ready_{kind}_from_exec_p50_ms": _p(parts["from_exec"], 50),
        f"{prefix}_exec_to_imported_p50_ms": _p(parts["imports"], 50),
        f"{prefix}_exec_to_session_p50_ms": _p(parts["pre_session"], 50),
        f"{prefix}_create_p50_ms": _p(parts["create"], 50),
        f"{prefix}_doors_p50_ms": _p(parts["doors"], 50),
        f"session_end_to_end_{kind}_p50_ms": _p(walls, 50),
        f"session_end_to_end_{kind}_p90_ms": _p(walls, 90),
        f"session_end_to_end_{kind}_cpu_p50_ms": _p(runs.cpu, 50),
        f"{prefix}_app_to_torn_down_p50_ms": _p([t["torn_down"] - t["app_started"] for t in timings], 50),
        f"{prefix}_after_teardown_p50_ms": round(percentile(walls, 50) - percentile(parts["pre_session"], 50)
                                                 - torn_down, 1),
        f"session_end_to_end_{kind}_n": len(walls),
        f"session_ready_{kind}_n": len(parts["from_exec"]),
    }
    return figures


def _imports_and_exit(count: int) -> dict[str, list[float]]:
    """Python start + the launcher's imports (exec → mark), and its exit with them loaded (mark → reaped)."""
    marked = [sys.executable, "-c", f"{LAUNCHER_IMPORTS}\nimport time\nprint('{IMPORTED}', time.time_ns())"]
    imports, exits = [], []
    for _ in range(count):
        exec_ns = time.time_ns()
        done = subprocess.run(marked, cwd="/", capture_output=True, text=True, timeout=120, check=True)
        end_ns = time.time_ns()
        mark = imported_mark(done.stdout)
        imports.append((mark - exec_ns) / 1e6)
        exits.append((end_ns - mark) / 1e6)
    return {"launcher imports": imports, "launcher exit": exits}


def _baselines(count: int) -> tuple[dict[str, Any], dict[str, list[float]]]:
    samples = {"python -c pass": _baseline([sys.executable, "-c", "pass"], count),
               "/bin/true": _baseline(["/bin/true"], count),
               **_imports_and_exit(count)}
    importtime = subprocess.run([sys.executable, "-X", "importtime", "-c", LAUNCHER_IMPORTS], cwd="/",
                                capture_output=True, text=True, timeout=120, check=True)
    figures = {"session_python_pass_p50_ms": _p(samples["python -c pass"], 50),
               "session_bin_true_p50_ms": _p(samples["/bin/true"], 50),
               "session_launcher_imports_p50_ms": _p(samples["launcher imports"], 50),
               "session_launcher_exit_p50_ms": _p(samples.pop("launcher exit"), 50),
               "session_launcher_imports_top": top_imports(importtime.stderr, 6),
               "session_baseline_n": count}
    return figures, samples


def _sessions(counts: Counts) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Every real session of the part, in one scratch directory; then what they left, per sid."""
    figures: dict[str, Any] = {}
    samples: dict[str, list[float]] = {}
    root = tempfile.mkdtemp(prefix="sharness-bench-session-")
    bench = Bench(root)
    try:
        for kind, runs in _rounds(bench, counts).items():
            figures.update(_kind_figures(kind, runs))
            samples[f"end to end, {kind} manifest"] = runs.walls
            if kind == "full":
                figures.update({f"session_door_ready_after_create_{role}_p50_ms": _p(values, 50)
                                for role, values in sorted(runs.per_door.items())})
        figures.update(_sleeping_pss(bench))
    finally:
        sids = sorted(set(bench.sids) | set(os.listdir(bench.audit)))  # every session logs, even a failed one
        shutil.rmtree(root, ignore_errors=True)
    figures["session_leftovers"] = ", ".join(thing for sid in sids for thing in leftovers(sid)) or "none"
    return figures, samples


def measure(counts: Counts) -> dict[str, Any]:
    """Every figure of the part (flat keys, `session_` prefix), the targets, and samples to plot."""
    if os.geteuid() != 0:
        raise RuntimeError("bench.session_bench runs real sessions: run it as root")
    figures: dict[str, Any] = dict(TARGETS)
    baselines, start_samples = _baselines(counts.baseline)
    sessions, session_samples = _sessions(counts)
    doors, door_samples = _doors(counts.doors)
    figures.update({"session_ready_ms": sessions["session_ready_full_after_imports_p50_ms"],
                    "session_end_to_end_ms": sessions["session_end_to_end_full_p50_ms"],
                    "session_pss_mb": sessions.pop("session_pss_mb")})
    figures.update(baselines)
    figures.update(sessions)
    figures.update(doors)
    figures["samples"] = {"session start to end (ms)": {**session_samples, **start_samples},
                          "door start to ready (ms)": door_samples}
    return figures


def run(quick: bool) -> dict[str, Any]:
    """The session figures with their targets and baselines."""
    return measure(QUICK if quick else FULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.session_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    figures = run(args.quick)
    figures.pop("samples")
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
