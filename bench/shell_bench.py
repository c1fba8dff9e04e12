"""Shell door figures from one real session: the overhead of a command through the door, and its throughput.

The app of the session (this module run as `python -m bench.shell_bench app N BYTES`) measures, in the same
run and interleaved: `sharness-launch sh -- true` against a direct fork-exec of `true` from the app, the
door's own round trip (ShellClient.run(["true"]) from the already-running app, no CLI start-up), and the
bytes per second of BYTES of text lines (`yes ... | head -c`) through the door against the same command on
a direct pipe.
Needs root; the session removes what it made (the launcher checks its teardown).

    python -m bench.shell_bench [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._stats import percentile
from launcher.manifest import load_manifest

TARGETS = {"shell_target_overhead_ms": 30, "shell_target_throughput_ratio": 0.5}
RATIOS = (("shell_sh_true_overhead_p50_ms", "shell_target_overhead_ms"),
          ("shell_throughput_ratio", "shell_target_throughput_ratio"))
LAUNCHER = str(Path(sys.executable).parent / "sharness-launch")
ROOT = Path(__file__).resolve().parent.parent
# What a Python client cannot go under: the interpreter's start, with and without site (this venv's editable
# install adds a finder to site), and with ssl, then the sh client's own imports (no door, no TLS) as the console
# script `make` writes loads them: -S, the tree on the path, doors.shell.cli (launcher/entry.py).
FLOORS = {"python_S_pass": [sys.executable, "-S", "-c", "pass"], "python_pass": [sys.executable, "-c", "pass"],
          "python_ssl": [sys.executable, "-c", "import ssl"],
          "sh_imports": [sys.executable, "-S", "-c",
                         f"import sys; sys.path.append({str(ROOT)!r}); import doors.shell.cli"]}
TEXT = "yes 'a line of build output, as a compiler or a test runner prints it' | head -c {size}"


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def door_cpu_ms() -> float:
    """The shell door's own CPU so far (user + system, ms), asked of the bench runner outside the session (the app
    cannot see the door's /proc); NaN when it could not tell."""
    print(json.dumps({"door_cpu": os.environ["SHARNESS_SESSION"]}), flush=True)
    answer = sys.stdin.readline().strip()
    return float(answer) if answer else float("nan")


def _door_cpu_of(session_id: str) -> float:
    """The oldest process of the session's shell user is its door (asked between commands): its utime + stime."""
    import pwd

    try:
        uid = pwd.getpwnam(f"sh-{session_id}-shell").pw_uid
    except KeyError:
        return float("nan")
    oldest: tuple[int, float] | None = None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        started, cpu = int(fields[19]), (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
        if oldest is None or started < oldest[0]:
            oldest = (started, cpu)
    return oldest[1] if oldest is not None else float("nan")


def _session(command: list[str]) -> list[str]:
    """Run the session, answering the app's door_cpu questions; its stdout lines."""
    lines: list[str] = []
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=ROOT) as session:
        assert session.stdin is not None and session.stdout is not None and session.stderr is not None
        for line in session.stdout:
            if line.startswith('{"door_cpu"'):
                session.stdin.write(f"{_door_cpu_of(json.loads(line)['door_cpu'])}\n")
                session.stdin.flush()
                continue
            lines.append(line)
        errors = session.stderr.read()
        if session.wait(timeout=600) != 0:
            raise RuntimeError(f"the shell bench session failed: {errors[-2000:]}")
    return lines


def app(runs: int, size: int) -> dict[str, Any]:
    """Inside the session: every figure, as lists of samples (ms) and throughputs (bytes/s)."""
    from doors.shell.client import ShellClient

    samples: dict[str, list[float]] = {name: [] for name in (*FLOORS, "direct", "sh", "client", "door_bps",
                                                              "pipe_bps", "client_cpu_ms_per_mib", "ndjson_bps",
                                                              "ndjson_client_cpu_ms_per_mib", "door_bps_door_cpu",
                                                              "ndjson_bps_door_cpu")}
    with ShellClient.from_env() as shell:
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(["true"], check=True)
            samples["direct"].append(_ms(start))
            start = time.perf_counter()
            subprocess.run([LAUNCHER, "sh", "--", "true"], check=True)
            samples["sh"].append(_ms(start))
            for name, argv in FLOORS.items():
                start = time.perf_counter()
                subprocess.run(argv, check=True)
                samples[name].append(_ms(start))
            start = time.perf_counter()
            assert shell.run(["true"]).final["exit_code"] == 0
            samples["client"].append(_ms(start))
            # The binary framing (ShellClient's default) and NDJSON (what curl gets), interleaved.
            for key, ndjson in (("door_bps", False), ("ndjson_bps", True)):
                cpu_key = "client_cpu_ms_per_mib" if key == "door_bps" else "ndjson_client_cpu_ms_per_mib"
                door_cpu = door_cpu_ms()
                start, cpu = time.perf_counter(), time.process_time()
                got = sum(len(f.get("data", f.get("text", ""))) for f in shell.stream(
                    ["sh", "-c", TEXT.format(size=size)], ndjson=ndjson, max_output_bytes=2 * size))
                samples[key].append(got / (time.perf_counter() - start))
                samples[cpu_key].append((time.process_time() - cpu) * 1000 / (got / (1 << 20)))
                samples[f"{key}_door_cpu"].append((door_cpu_ms() - door_cpu) / (got / (1 << 20)))
                assert got == size
            start = time.perf_counter()
            with subprocess.Popen(["sh", "-c", TEXT.format(size=size)], stdout=subprocess.PIPE) as pipe:
                assert pipe.stdout is not None
                piped = len(pipe.stdout.read())
            samples["pipe_bps"].append(piped / (time.perf_counter() - start))
            assert got == piped == size
    return samples


def _manifest(workspace: str, argv: list[str]) -> dict[str, Any]:
    return {"sharness": "manifest/v0", "session": {"name": "bench", "trust_domain": "bench.sharness.test",
                                                    "ttl_s": 600},
            "workspace": workspace,
            "app": {"argv": argv, "files": {"read": [], "exec": []}, "process": {"max_memory_mb": 512,
                                                                                 "max_pids": 64}},
            "doors": {"shell": {"workspace": "read", "process": {"max_memory_mb": 512, "max_pids": 64}}},
            "edges": [["app", "shell"]]}


def run(quick: bool) -> dict[str, Any]:
    """One session; the p50 of each figure and the ratios the targets are read against."""
    runs, size = (5, 4 << 20) if quick else (30, 32 << 20)
    root = tempfile.mkdtemp(prefix="sh-bench-shell-", dir="/tmp")
    try:
        os.chmod(root, 0o755)
        workspace = os.path.join(root, "ws")
        os.mkdir(workspace)
        os.chown(workspace, 65534, 65534)
        # The app is this module; bench/ is not installed, so its tree goes on the path (the app may read it).
        argv = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                "from bench.shell_bench import main; main()", "app", str(runs), str(size)]
        document = _manifest(workspace, argv)
        path = os.path.join(root, "manifest.json")
        Path(path).write_text(json.dumps(document))
        digest = load_manifest(Path(path).read_bytes()).sha256
        # Its audit log goes in the scratch, removed below: a bench leaves nothing in the person's audit root.
        lines = _session([LAUNCHER, "run", path, "--expect-hash", digest, "--json", "--best-effort", "--audit-dir",
                          os.path.join(root, "audit")])
        samples = json.loads(next(line for line in lines if line.startswith('{"python_S_pass"')))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    p50 = {name: percentile(values, 50) for name, values in samples.items()}
    return {**TARGETS, "shell_runs": runs, "shell_throughput_bytes": size,
            "shell_direct_true_p50_ms": round(p50["direct"], 2), "shell_sh_true_p50_ms": round(p50["sh"], 2),
            "shell_sh_true_overhead_p50_ms": round(p50["sh"] - p50["direct"], 2),
            "shell_client_true_p50_ms": round(p50["client"], 2),
            "shell_client_true_overhead_p50_ms": round(p50["client"] - p50["direct"], 2),
            **{f"shell_floor_{name}_p50_ms": round(p50[name], 2) for name in FLOORS},
            "shell_client_cpu_ms_per_mib": round(p50["client_cpu_ms_per_mib"], 2),
            "shell_door_mb_per_s": round(p50["door_bps"] / 1e6, 1),
            "shell_pipe_mb_per_s": round(p50["pipe_bps"] / 1e6, 1),
            "shell_throughput_ratio": round(p50["door_bps"] / p50["pipe_bps"], 3),
            "shell_ndjson_mb_per_s": round(p50["ndjson_bps"] / 1e6, 1),
            "shell_ndjson_throughput_ratio": round(p50["ndjson_bps"] / p50["pipe_bps"], 3),
            "shell_ndjson_client_cpu_ms_per_mib": round(p50["ndjson_client_cpu_ms_per_mib"], 2),
            # the door's own CPU per MiB sent (clock ticks of 10 ms: read over a whole transfer)
            "shell_door_cpu_ms_per_mib": round(p50["door_bps_door_cpu"], 2),
            "shell_ndjson_door_cpu_ms_per_mib": round(p50["ndjson_bps_door_cpu"], 2),
            "samples": {"shell true (ms)": {"direct": samples["direct"], "sh": samples["sh"],
                                            "client": samples["client"]}}}


def main() -> None:
    if sys.argv[1:2] == ["app"]:
        print(json.dumps(app(int(sys.argv[2]), int(sys.argv[3]))), flush=True)
        return
    print(json.dumps({k: v for k, v in run("--quick" in sys.argv).items() if k != "samples"}, indent=2))


if __name__ == "__main__":
    main()
