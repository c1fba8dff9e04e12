"""`sharness-launch hello`: every probe held, by the mechanism it names; controls pass; nothing stays."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from launcher.hello import EXPECTED_PROBES
from tests.integration._session import LAUNCHER, leftovers

pytestmark = pytest.mark.root

# probe → a word the verdict must name: held by THIS mechanism, not by an accident of the setup.
MECHANISM = {
    "workspace.write": "read-only bind mount", "etc.write": "DAC", "other_dir.write": "mount namespace",
    "key.read": "pid namespace", "launcher_state.read": "mount namespace", "environ.read": "pid namespace",
    "egress.public": "seccomp", "door.off_edge": "mount namespace",
    "door.signal": "pid namespace",
    "door.ptrace": "seccomp", "socket.inet": "seccomp", "socket.udp": "seccomp", "socket.packet": "seccomp",
    "io_uring": "seccomp",
    "userns": "seccomp", "setuid.root": "capability", "memory.limit": "memory cgroup",
    "pids.limit": "pids cgroup",
}


def test_hello_holds_every_probe_with_the_named_mechanism(tmp_path: object) -> None:
    # The key registry lies beside the audit root (audit_keys.registry_for): both inside this test's scratch.
    done = subprocess.run([*LAUNCHER, "hello", "--json", "--audit-dir", f"{tmp_path}/audit"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    probes = {probe["probe"]: probe for probe in report["probes"]}
    assert report["ok"] and report["held"] == report["total"] == EXPECTED_PROBES == len(MECHANISM)
    for name, word in MECHANISM.items():
        assert probes[name]["held"], probes[name]
        assert word in probes[name]["who"], probes[name]
    for control in ("control.private_write", "control.key_own", "control.fs_hello", "control.fs_write"):
        assert probes[control]["held"], probes[control]
    targets = [name for name in probes if name.startswith("control.target.")]
    assert len(targets) == report["expected_targets"] and all(probes[name]["held"] for name in targets)
    assert "control.target.key.read" in targets and "control.target.control.key_own" in targets
    assert report["session"]["exit_code"] == 0 and report["session"]["teardown_errors"] == []
    assert leftovers(report["sid"]) == {}
    assert os.path.isfile(f"{tmp_path}/keys/{report['sid']}.pub")  # not in the scratch's parent, left behind
    verify = subprocess.run([*LAUNCHER, "verify-audit", report["session"]["audit_dir"]], capture_output=True,
                            text=True)
    assert verify.returncode == 0 and "intact" in verify.stdout
