"""sharness-launchd against the direct launcher, in the same run (`python -m bench.launchd_bench [--quick]`).

- `launchd_first_instruction_{daemon,direct}_p50_ms`: from the exec of `sharness-launch` to the app's first
  instruction (the app is `date +%s.%N`: its clock when it runs, minus the clock taken before the exec). The
  daemon path is a caller (nobody, by setpriv) whose client asks a running daemon; the direct path is root
  running the launcher itself. Rounds alternate, so load from elsewhere hits both alike.
- `launchd_sessions_per_s_8_callers`: 8 callers at once, each running sessions of `/bin/true` one after another
  through the daemon: sessions ended / wall time; `..._8_direct_launchers`: the same with 8 root launchers.
- `launchd_unit_exposure`: `systemd-analyze security --offline=yes` of the rendered service (lower is better).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from launcher.lifecycle.audit_keys import registry_for
from pki.vocabulary import AUDIT_ROOT

BIN = Path(sys.executable).parent
LAUNCH, LAUNCHD = str(BIN / "sharness-launch"), str(BIN / "sharness-launchd")
ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
CALLERS = 8
RATIOS = (("launchd_first_instruction_daemon_p50_ms", "launchd_first_instruction_direct_p50_ms"),)


def _manifest(scratch: Path, name: str, argv: list[str]) -> tuple[str, str]:
    workspace = scratch / f"ws-{name}"
    workspace.mkdir(mode=0o755, exist_ok=True)
    os.chown(workspace, NOBODY, NOBODY)
    document = {
        "sharness": "manifest/v0",
        "session": {"name": name, "trust_domain": "bench.sharness.test", "ttl_s": 600},
        "workspace": str(workspace),
        "app": {"argv": argv, "files": {"read": [], "exec": []}, "process": {"max_memory_mb": 256, "max_pids": 64}},
        "doors": {"fs": {"refuse_secrets": True, "max_file_bytes": 1048576, "max_total_bytes": 16777216,
                         "max_files": 1000}},
        "edges": [["app", "fs"]],
    }
    path = scratch / f"{name}.json"
    path.write_text(json.dumps(document))
    os.chmod(path, 0o644)
    digest = subprocess.run([LAUNCH, "hash", str(path)], capture_output=True, text=True, check=True).stdout.strip()
    return str(path), digest


def _start_daemon(scratch: Path) -> subprocess.Popen[bytes]:
    policy = scratch / "launchd.json"
    policy.write_text(json.dumps({"sharness": "launchd/v0", "limits": {"max_sessions": CALLERS},
                                  "principals": [{"uid": NOBODY, "max_sessions": CALLERS}]}))
    os.chmod(policy, 0o644)
    daemon = subprocess.Popen([LAUNCHD, "--policy", str(policy), "--socket", str(scratch / "d.sock"), "--state-dir",
                               str(scratch / "state")], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(scratch / "d.sock"))
            return daemon
        except OSError:
            time.sleep(0.02)
        finally:
            probe.close()
    daemon.kill()
    raise RuntimeError("sharness-launchd did not start")


def _caller(scratch: Path) -> tuple[list[str], dict[str, str]]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SHARNESS_LAUNCHD_SOCKET": str(scratch / "d.sock")}
    return ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"], env


def _first_instruction_ms(argv: list[str], env: dict[str, str] | None) -> float:
    before = time.time()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-3:]} failed ({done.returncode}): {done.stderr[-400:]}")
    return (float(done.stdout.split()[0]) - before) * 1000


def _sessions_per_s(scratch: Path, manifest: tuple[str, str], each: int, *, direct: bool) -> float:
    prefix, env = _caller(scratch)
    direct_argv = [LAUNCH, "run", manifest[0], "--expect-hash", manifest[1], "--audit-dir", str(scratch / "audit")]
    argv = direct_argv if direct else [*prefix, LAUNCH, manifest[0], "--expect-hash", manifest[1]]

    def one_caller(_: int) -> int:
        for _ in range(each):
            done = subprocess.run(argv, env=None if direct else env, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise RuntimeError(f"a session failed ({done.returncode}): {done.stderr[-600:]}")
        return each

    start = time.monotonic()
    with ThreadPoolExecutor(CALLERS) as pool:
        total = sum(pool.map(one_caller, range(CALLERS)))
    return total / (time.monotonic() - start)


def unit_exposure(scratch: Path) -> float | None:
    """The service's `systemd-analyze security --offline=yes` score as `make install-units` renders it."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return None
    subprocess.run(["make", "-s", "-C", str(ROOT), "install-units", f"DESTDIR={scratch / 'dest'}", f"BINDIR={BIN}"],
                   check=True, capture_output=True)
    service = scratch / "dest/etc/systemd/system/sharness-launchd.service"
    out = subprocess.run([analyze, "security", "--offline=yes", str(service)], capture_output=True, text=True).stdout
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d)", out)
    return float(found.group(1)) if found else None


def run(quick: bool) -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"launchd_skipped": "needs root (the daemon and the direct launcher create users)"}
    scratch = Path(tempfile.mkdtemp(prefix="sh-bench-launchd-", dir="/tmp"))
    os.chmod(scratch, 0o755)
    daemon = _start_daemon(scratch)
    try:
        clock = _manifest(scratch, "clock", ["/bin/date", "+%s.%N"])
        prefix, env = _caller(scratch)
        times: dict[str, list[float]] = {"daemon": [], "direct": []}
        for _ in range(3 if quick else 10):
            times["daemon"].append(_first_instruction_ms([*prefix, LAUNCH, clock[0], "--expect-hash", clock[1]], env))
            times["direct"].append(_first_instruction_ms([LAUNCH, "run", clock[0], "--expect-hash", clock[1],
                                                          "--audit-dir", str(scratch / "audit")], None))
        true = _manifest(scratch, "true", ["/bin/true"])
        rate = _sessions_per_s(scratch, true, 2 if quick else 5, direct=False)
        direct_rate = _sessions_per_s(scratch, true, 2 if quick else 5, direct=True)
        figures: dict[str, Any] = {f"launchd_first_instruction_{kind}_p50_ms": round(statistics.median(samples), 1)
                                   for kind, samples in times.items()}
        figures["launchd_sessions_per_s_8_callers"] = round(rate, 2)
        figures["launchd_sessions_per_s_8_direct_launchers"] = round(direct_rate, 2)
        figures["launchd_unit_exposure"] = unit_exposure(scratch)
        figures["samples"] = {"launchd first instruction (ms)": times}
        return figures
    finally:
        daemon.terminate()
        daemon.wait(timeout=180)
        _forget_daemon_sessions(scratch / "state" / "owners")
        shutil.rmtree(scratch, ignore_errors=True)


def _forget_daemon_sessions(owners: Path) -> None:
    """The audit logs and registered keys of the sessions the daemon started (it cannot be sent an audit dir)."""
    for sid in os.listdir(owners) if owners.is_dir() else ():
        if sid.isalnum():
            shutil.rmtree(os.path.join(AUDIT_ROOT, sid), ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(registry_for(AUDIT_ROOT), f"{sid}.pub"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.launchd_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    figures = run(parser.parse_args(argv).quick)
    figures.pop("samples", None)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
