"""The shell door's overlay apply, from one real session: files per second through `apply`, against the same
files written through the fs door's client directly, in the same run and interleaved.

The app of the session (this module run as `python -m bench.overlay_bench app ROUNDS FILES`) does, each round:
a command writes FILES small files into a new directory of the overlay (not timed), then `apply` lands them
through the fs door (timed: reading the upper layer, the change list, one fs write per file); then it writes
FILES files of the same sizes through FsClient into another new directory (timed: a mkdir and one write per
file). Both end in the same fs door writing as the workspace owner, so the ratio is the apply's own cost.
Needs root; the session removes what it made.

    python -m bench.overlay_bench [--quick]
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

LAUNCHER = str(Path(sys.executable).parent / "sharness-launch")
ROOT = Path(__file__).resolve().parent.parent
BUILD = "mkdir {dir} && i=0 && while [ $i -lt {files} ]; do echo line $i of a small build output > {dir}/f$i; " \
        "i=$((i+1)); done"


def app(rounds: int, files: int) -> dict[str, Any]:
    """Inside the session: files/s of each apply and of each direct round."""
    from doors.fs.client import FsClient
    from doors.shell.client import ShellClient

    samples: dict[str, list[float]] = {"apply_fps": [], "direct_fps": []}
    with ShellClient.from_env() as shell, FsClient.from_env() as fs:
        for round_index in range(rounds):
            built = shell.run(script=BUILD.format(dir=f"ov{round_index}", files=files))
            assert built.final["exit_code"] == 0, built.stderr
            start = time.perf_counter()
            answer = shell.apply()
            samples["apply_fps"].append(files / (time.perf_counter() - start))
            assert answer["applied"] == files + 1 and answer["refused"] == 0, answer["refused"]
            start = time.perf_counter()
            fs.mkdir(f"direct{round_index}")
            for i in range(files):
                fs.write(f"direct{round_index}/f{i}", f"line {i} of a small build output\n".encode())
            samples["direct_fps"].append(files / (time.perf_counter() - start))
    return samples


def _manifest(workspace: str, argv: list[str], files: int, rounds: int) -> dict[str, Any]:
    return {"sharness": "manifest/v0", "session": {"name": "bench", "trust_domain": "bench.sharness.test",
                                                    "ttl_s": 600},
            "workspace": workspace,
            "app": {"argv": argv, "files": {"read": [], "exec": []}, "process": {"max_memory_mb": 512,
                                                                                 "max_pids": 64}},
            "doors": {"fs": {"refuse_secrets": True, "max_file_bytes": 1 << 20, "max_total_bytes": 1 << 30,
                             "max_files": 2 * rounds * (files + 1) + 16},
                      "shell": {"workspace": "overlay", "process": {"max_memory_mb": 512, "max_pids": 64}}},
            "edges": [["app", "fs"], ["app", "shell"], ["shell", "fs"]]}


def run(quick: bool) -> dict[str, Any]:
    """One session; the p50 files/s of apply and of direct writes, and their ratio."""
    rounds, files = (2, 1000) if quick else (7, 1000)
    root = tempfile.mkdtemp(prefix="sh-bench-overlay-", dir="/tmp")
    try:
        os.chmod(root, 0o755)
        workspace = os.path.join(root, "ws")
        os.mkdir(workspace)
        os.chown(workspace, 65534, 65534)
        argv = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                "from bench.overlay_bench import main; main()", "app", str(rounds), str(files)]
        path = os.path.join(root, "manifest.json")
        Path(path).write_text(json.dumps(_manifest(workspace, argv, files, rounds)))
        digest = load_manifest(Path(path).read_bytes()).sha256
        done = subprocess.run([LAUNCHER, "run", path, "--expect-hash", digest, "--json", "--best-effort",
                               "--audit-dir", os.path.join(root, "audit")],
                              capture_output=True, text=True, timeout=900, cwd=ROOT, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"the overlay bench session failed: {done.stderr[-2000:]}")
        samples = json.loads(next(line for line in done.stdout.splitlines() if line.startswith('{"apply_fps"')))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    apply_fps, direct_fps = percentile(samples["apply_fps"], 50), percentile(samples["direct_fps"], 50)
    return {"overlay_rounds": rounds, "overlay_files": files,
            "overlay_apply_files_per_s": round(apply_fps), "overlay_direct_fs_files_per_s": round(direct_fps),
            "overlay_apply_vs_direct_ratio": round(apply_fps / direct_fps, 3),
            "samples": {"overlay apply (files/s)": {"apply": samples["apply_fps"], "direct": samples["direct_fps"]}}}


def main() -> None:
    if sys.argv[1:2] == ["app"]:
        print(json.dumps(app(int(sys.argv[2]), int(sys.argv[3]))), flush=True)
        return
    print(json.dumps({k: v for k, v in run("--quick" in sys.argv).items() if k != "samples"}, indent=2))


if __name__ == "__main__":
    main()
