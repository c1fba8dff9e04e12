"""`sharness-launch hello`: a real session whose app is the built-in probe; prints what held each probe."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from launcher.hello_targets import target_controls
from launcher.kernel.probe_facts import KernelFacts
from launcher.lifecycle.session import RunOptions, Session, SessionInfo, SessionResult
from launcher.manifest import Manifest, load_manifest
from pki.vocabulary import AUDIT_ROOT, HELLO_ROOT

APP_MEMORY_MB = 128
APP_PIDS = 32
VICTIM_DOOR = "keys"  # a door running as its own session user
NOBODY = 65534
OFF_EDGE_DOOR = "keys"


@dataclass
class HelloReport:
    sid: str
    probes: list[dict[str, object]] = field(default_factory=list)
    session: SessionResult | None = None

    @property
    def attacks(self) -> list[dict[str, object]]:
        return [p for p in self.probes if not str(p["probe"]).startswith("control.")]

    @property
    def controls(self) -> list[dict[str, object]]:
        return [p for p in self.probes if str(p["probe"]).startswith("control.")]

    @property
    def held(self) -> int:
        return sum(1 for p in self.attacks if p["held"])

    @property
    def ok(self) -> bool:
        targets = sum(1 for p in self.controls if str(p["probe"]).startswith("control.target."))
        complete = len(self.attacks) >= EXPECTED_PROBES and targets >= EXPECTED_TARGETS
        return complete and self.held == len(self.attacks) and all(p["held"] for p in self.controls)

    def to_json(self) -> dict[str, object]:
        session = self.session
        return {
            "sid": self.sid,
            "held": self.held,
            "total": len(self.attacks),
            "expected_total": EXPECTED_PROBES,
            "controls_ok": all(p["held"] for p in self.controls) and bool(self.controls),
            "expected_targets": EXPECTED_TARGETS,
            "ok": self.ok,
            "probes": self.probes,
            "session": None if session is None else {
                "exit_code": session.exit_code,
                "reason": session.reason,
                "audit_dir": session.audit_dir,
                "timings_ms": session.timings_ms,
                "teardown_errors": session.teardown_errors,
            },
        }


EXPECTED_PROBES = 18
EXPECTED_TARGETS = 11  # launcher-side controls (launcher/hello_targets.py): one per probe aiming at something


def hello_manifest(workspace: str) -> Manifest:
    """The built-in probe session: every door, the default edges, small limits the probe pushes against."""
    document = {
        "sharness": "manifest/v0",
        "session": {"name": "hello", "trust_domain": "hello.sharness.test", "ttl_s": 300},
        "workspace": workspace,
        "app": {
            "argv": [sys.executable, "-m", "doors.hello_probe"],
            # The app may read the workspace, so only Landlock (not invisibility) refuses its direct write.
            "files": {"read": [workspace], "exec": []},
            "process": {"max_memory_mb": APP_MEMORY_MB, "max_pids": APP_PIDS},
        },
        "doors": {
            "fs": {"read_only": [".git"], "refuse_secrets": True, "max_file_bytes": 1048576,
                   "max_total_bytes": 16777216, "max_files": 1000},
            "keys": {},
        },
        "edges": [["app", "fs"]],
    }
    return load_manifest(json.dumps(document).encode())


def _probe_targets(info: SessionInfo, workspace: str, manifest: Manifest) -> dict[str, Any]:
    layout = info.layout
    targets = {
        "pids": info.pids,
        "victim_door": VICTIM_DOOR,
        "off_edge_door": OFF_EDGE_DOOR,
        "hello_door": "fs",
        "workspace": workspace,
        "runtime_dir": layout.runtime_dir,
        "journal": f"{layout.state_dir}/journal",
        "sockets": {role: layout.socket_path(role) for role in manifest.roles if role != "app"},
        "deny_inet": ("app", "net") not in manifest.edges,
        "max_memory_mb": APP_MEMORY_MB,
        "max_pids": APP_PIDS,
    }
    return targets


def run_hello(facts: KernelFacts, audit_root: str = AUDIT_ROOT) -> HelloReport:
    """Run the probe session and collect its verdicts; removes its scratch workspace afterwards."""
    os.makedirs(HELLO_ROOT, mode=0o755, exist_ok=True)
    workspace = f"{HELLO_ROOT}/sh-hello-{secrets.token_hex(4)}"
    os.mkdir(workspace)
    os.chmod(workspace, 0o777)  # so that only Landlock, not DAC, can refuse the app's direct write
    os.chown(workspace, NOBODY, NOBODY)  # the fs door runs as the workspace owner, never root
    output = os.memfd_create("sharness-hello-probe")
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        manifest = hello_manifest(workspace)
        checked: list[dict[str, object]] = []

        def aim(info: SessionInfo) -> dict[str, str]:
            """The probe's targets, each checked from here first: the app starts right after."""
            targets = _probe_targets(info, workspace, manifest)
            checked.extend(target_controls(info, targets))
            return {"SHARNESS_PROBE": json.dumps(targets)}

        options = RunOptions(audit_root=audit_root, app_stdio={0: null, 1: output, 2: 2}, app_env_extra=aim)
        session = Session(manifest, facts, options)
        result = session.run()
        report = HelloReport(sid=result.sid, session=result, probes=checked)
        os.lseek(output, 0, os.SEEK_SET)
        with os.fdopen(os.dup(output), "rb") as stream:
            for line in stream.read().decode(errors="replace").splitlines():
                try:
                    report.probes.append(json.loads(line))
                except ValueError:
                    report.probes.append({"probe": "output", "attempt": "", "held": False,
                                          "who": "the probe printed something unexpected", "detail": line[:200]})
        return report
    finally:
        os.close(output)
        os.close(null)
        shutil.rmtree(workspace, ignore_errors=True)
        with contextlib.suppress(OSError):  # the scratch root too, unless another hello is using it
            os.rmdir(HELLO_ROOT)


def render(report: HelloReport) -> str:
    lines = [f"sharness-launch hello: session {report.sid}, the app tried what it must not do:"]
    for probe in report.probes:
        mark = "held" if probe["held"] else "NOT HELD"
        if str(probe["probe"]).startswith("control."):
            mark = "ok" if probe["held"] else "FAILED"
        lines.append(f"  {mark:<9} {probe['probe']:<22} {probe['attempt']}")
        lines.append(f"  {'':<9} {'':<22} -> {probe['who']}: {probe['detail']}")
    session = report.session
    total = len(report.attacks)
    missing = "" if total >= EXPECTED_PROBES else f" (expected {EXPECTED_PROBES} probes)"
    lines.append(f"{report.held}/{total} held{missing}")
    if session is not None:
        lines.append(f"session ended: {session.reason} (exit {session.exit_code}); audit log: {session.audit_dir}")
        if session.teardown_errors:
            lines.append(f"teardown errors: {session.teardown_errors}")
    return "\n".join(lines)
