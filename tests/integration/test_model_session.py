"""The model door in real sessions, as root, with the official anthropic SDK as the app's client.

Against the built-in twin: create, stream, count_tokens and models on both transports (plain HTTP through
ANTHROPIC_BASE_URL to the listener the launcher made in the app's netns; mutual TLS through
doors.model.client), each injected fault as its SDK error class, a cut stream raising rather than passing
silently, and the refusals an SDK would never provoke (malformed JSON, an oversized body, a model outside
the row, a client that never reads) each answered clearly with the door still serving. Then the budget under
50 parallel streams, and the provider key on its way from keys to an HTTPS upstream (test_model_key_session.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import pwd
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doors.model._prices import SHIPPED_PRICES
from doors.model._shape import CallPlan, estimate_input_tokens, plan_call
from launcher.kernel import netns
from tests.integration import model_probe
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    let_the_app_go,
    manifest_hash,
    pids_with_uids,
    probes_and_summary,
    wait_for_session_dir,
    write_manifest,
)

pytestmark = pytest.mark.root
PROBE = str(Path(__file__).with_name("model_probe.py"))
MODEL = "claude-haiku-4-5"


def _manifest(tmp_path: Path, args: list[str], model: dict[str, Any]) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = basic_manifest(workspace, [sys.executable, PROBE, *args])
    document["doors"] = {"model": model}
    document["edges"] = [["app", "model"]]
    return write_manifest(tmp_path, document)


def _run(manifest: Path, audit_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--audit-dir",
                           str(audit_dir), "--json"], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    probes, summary = probes_and_summary(done.stdout)
    assert "done" in probes, done.stdout + done.stderr
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}
    assert "model: spent" in done.stderr  # the summary at exit: spend beside budget
    events = [json.loads(line) for line in Path(summary["audit_dir"], "audit.jsonl").read_text().splitlines()]
    return probes, summary, events


def _calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event.get("kind") == "model.call"]


def test_the_sdk_works_unchanged_on_both_transports_and_every_refusal_is_clear(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, ["all"], {"upstream": "twin", "budget_microusd": 1_000_000, "models": [MODEL]})
    probes, summary, events = _run(manifest, tmp_path / "audit")
    assert probes["env"]["base_url"] == "http://127.0.0.1:3129" and "127.0.0.1" in probes["env"]["no_proxy"]
    for transport in ("plain", "mtls"):
        assert probes[f"{transport}.create"]["text"].startswith("twin:")
        assert probes[f"{transport}.create"]["request_id"].startswith("req_sh")
        assert probes[f"{transport}.stream"]["stop_reason"] == "end_turn"
        assert probes[f"{transport}.count_tokens"]["input_tokens"] > 0
        assert probes[f"{transport}.models"]["ids"] == [MODEL]
        faults = probes[f"{transport}.faults"]
        assert faults["[twin:429]"]["error"] == "RateLimitError"
        assert faults["[twin:529]"]["error"] == "OverloadedError"
        # Cut or errored after a 200: the SDK raises instead of handing back half a message as if whole.
        assert faults["[twin:cut=3]"]["error"] == faults["[twin:error=3]"]["error"] == "APIStatusError"
        assert probes[f"{transport}.outside"] == {"probe": f"{transport}.outside", "error": "NotFoundError",
                                                  "row": "doors.model.models"}
    assert (probes["raw.malformed"]["status"], probes["raw.malformed"]["type"]) == (400, "invalid_request_error")
    assert (probes["raw.oversized"]["status"], probes["raw.oversized"]["type"]) == (413, "request_too_large")
    assert probes["raw.alive"]["text"].startswith("twin:")  # served while a client sat on an unread stream
    calls = _calls(events)
    by_id = {call["request_id"]: call for call in calls}
    assert by_id[probes["plain.create"]["request_id"]]["caller"] == "app"
    cut = by_id[probes["plain.faults"]["[twin:cut=3]"]["request_id"]]
    assert cut["ended"] == "cut" and cut["charged_microusd"] == cut["reserved_microusd"] > 0
    assert by_id[probes["plain.faults"]["[twin:429]"]["request_id"]]["charged_microusd"] == 0
    assert all(call["upstream"] == "sharness.model.anthropic.twin" for call in calls)  # says it ran on the twin
    text = Path(summary["audit_dir"], "audit.jsonl").read_text()
    assert "hello" not in text and "twin: hello" not in text  # never prompt or completion text
    assert "sharness-model-door-holds-the-key" not in text  # never a header value


def _reservation(max_tokens: int, content: str) -> int:
    body = json.dumps({"max_tokens": max_tokens, "messages": [{"role": "user", "content": content}],
                       "model": MODEL, "stream": True}).encode()
    plan = plan_call(json.loads(body), SHIPPED_PRICES[MODEL], 10**12, estimate_input_tokens(body), 16)
    assert isinstance(plan, CallPlan)
    return plan.reserve_microusd


def test_fifty_parallel_streams_against_a_budget_for_ten_never_spend_more(tmp_path: Path) -> None:
    budget = 10 * _reservation(64, model_probe.PARALLEL_PROMPT) + 2 * _reservation(32, "[twin:cut=3]")
    manifest = _manifest(tmp_path, ["parallel", "50"], {"upstream": "twin", "budget_microusd": budget})
    probes, _, events = _run(manifest, tmp_path / "audit")
    outcomes = probes["parallel"]["outcomes"]
    assert "ok" in outcomes and "402" in outcomes and set(outcomes) <= {"ok", "402"}, outcomes
    calls = _calls(events)
    spent = sum(call["charged_microusd"] for call in calls)
    assert spent <= budget
    assert all(call["charged_microusd"] <= call["reserved_microusd"] for call in calls)
    refused = [call for call in calls if call["ended"] == "refused"]
    assert refused and all(call["row"] == "doors.model.budget_microusd" and call["status"] == 402
                           for call in refused)
    cut = [call for call in calls if call["ended"] == "cut"]
    assert all(call["charged_microusd"] == call["reserved_microusd"] for call in cut)


def _connect_in(netns_name: str | None) -> int:
    """connect() to the model listener's address from `netns_name` (None: the host's), as root; 0 or the errno."""
    with (netns.entered(netns_name) if netns_name else contextlib.nullcontext()), \
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        return sock.connect_ex(("127.0.0.1", 3129))


def test_the_kernel_admits_the_caller_only_the_apps_netns_has_the_listener(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, ["hold"], {"upstream": "twin", "budget_microusd": 1_000_000})
    launcher = subprocess.Popen([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest),
                                 "--audit-dir", str(tmp_path / "audit"), "--json"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert launcher.stdout is not None
        while not (line := launcher.stdout.readline()).startswith('{"probe": "hold"'):
            assert line, "the launcher ended before the app held"
        sid = wait_for_session_dir(launcher.pid)
        assert _connect_in(f"sh-{sid}-app") == 0  # the control: the app's namespace has it
        assert _connect_in(None) == errno.ECONNREFUSED  # the host's loopback has no such listener
        app_pids = pids_with_uids({pwd.getpwnam(f"sh-{sid}-app").pw_uid})
        let_the_app_go(sid, app_pids)
        launcher.communicate(timeout=120)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 0
