"""`sharness-launch demo` (what `make run` runs): the shipped agent fixes the sample project in a real session,
is refused what it must not do, and the launcher tells it from the verified audit log; nothing is left behind."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from launcher.demo import TEMPLATE, demo_manifest
from launcher.policy.plan import build_plan
from pki.vocabulary import DEMO_ROOT
from tests.integration._session import LAUNCHER, leftovers

pytestmark = [pytest.mark.root, pytest.mark.slow]


def _demo(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LAUNCHER, "demo", "--audit-dir", str(tmp_path / "audit"), *extra], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_the_demo_fixes_the_project_and_is_refused_what_it_must_not_do(tmp_path: Path) -> None:
    done = _demo(tmp_path, "--json")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["ok"] and report["app_exit_code"] == 0
    did = [(act["door"], act["what"]) for act in report["did"]]
    shell_exits = [what.rsplit("exit ", 1)[1] for door, what in did if door == "shell"]
    assert shell_exits == ["1", "0"]  # the test failed, the agent wrote the fix, the test passed
    assert ("fs", "write calc.py (225 bytes, through the mount)") in did
    assert ("fs", "read TASK.md (through the mount)") in did
    assert [door for door, _ in did].count("model") == 1
    refused = {(act["door"], act["row"]) for act in report["refused"]}
    assert refused == {("fs", "doors.fs.read_only"), ("fs", "doors.fs.refuse_secrets"), ("net", "doors.net.allow")}
    spend = report["model_spend"]
    assert spend["calls"] == 1 and 0 < spend["spent_microusd"] <= spend["budget_microusd"]
    assert report["audit"]["intact"] and report["audit"]["lines"] > 10
    assert report["teardown_errors"] == [] and leftovers(report["sid"]) == {}
    copy = re.search(rf"workspace ({re.escape(DEMO_ROOT)}/sh-demo-[0-9a-f]+)", done.stderr)
    assert copy is not None and not Path(copy.group(1)).exists()  # the project's copy is gone
    # the agent's settings came from app.home_seed, copied into its own HOME
    assert re.search(rf"settings from /run/sharness/{report['sid']}/app/home/\.config/demo-agent/settings\.json "
                     r"\(model claude-sonnet-4-5\)", done.stderr), done.stderr[-2000:]
    for door in ("fs", "net", "shell", "model"):
        assert f"starting the {door} door" in done.stderr
    assert "agent: done, 8 steps, 0 not as expected" in done.stderr
    assert "writes go through the workspace mount" in done.stderr


def test_the_summary_for_a_person_names_who_refused(tmp_path: Path) -> None:
    done = _demo(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "refused by the fs door, row doors.fs.read_only" in done.stdout
    assert "refused by the net door, row doors.net.allow" in done.stdout
    assert re.search(r"model: spent \d+ of 100000 micro-USD", done.stdout)
    assert ": intact, 0 events lost" in done.stdout and "left behind: nothing" in done.stdout
    assert done.stdout.rstrip().endswith("demo: ok")


def test_the_demo_manifest_has_a_holder_for_every_row() -> None:
    from launcher.kernel.probe import probe_kernel

    plan = build_plan(demo_manifest("/var/lib/sharness/demo/sh-demo-test"), probe_kernel())
    assert plan.unheld_count == 0, [row.row_id for row in plan.rows if not row.held]
    assert json.loads(TEMPLATE.read_text())["doors"]["model"]["upstream"] == "twin"


def test_on_a_terminal_the_agents_steps_are_bold_and_the_summary_plain(tmp_path: Path) -> None:
    import os
    import select

    controller, terminal = os.openpty()
    launcher = subprocess.Popen([*LAUNCHER, "demo", "--audit-dir", str(tmp_path / "audit")], stdin=terminal,
                                stdout=terminal, stderr=terminal, close_fds=True)
    os.close(terminal)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: every holder of the terminal has gone
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
        code = launcher.wait(timeout=60)
    text = seen.decode(errors="replace")
    assert code == 0, text[-4000:]
    assert "\x1b[1magent step 1:\x1b[0m" in text and "\x1b[1magent step 8:\x1b[0m" in text  # through the relay
    assert "demo: ok" in text and "\x1b[1mwhat" not in text
