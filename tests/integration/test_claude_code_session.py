"""Claude Code, the real native binary, unmodified, as the app of a real root session: the example manifest
(manifests/examples/agent-cli.json) with this machine's workspace and the twin as the model. The twin's scripted
answers make it use its own tools: Write and Edit land through the mount and the fs door, Bash runs as its child
with every lock, and the writes the manifest forbids come back to it as an errno, which the twin then sees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from launcher.demo import DEMO_DIR
from pki.secret_shapes import secret_shape
from tests.integration._session import LAUNCHER, leftovers, manifest_hash, write_manifest

pytestmark = [pytest.mark.root, pytest.mark.slow]
EXAMPLES = DEMO_DIR.parent
EXAMPLE = json.loads((EXAMPLES / "agent-cli.json").read_text())
CLAUDE = Path(EXAMPLE["app"]["argv"][0])  # where `make claude-code` puts the pinned binary
# Manifest strings hold no newline: the key is its armour line and the start of an OpenSSH body, on one line.
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
PROMPT = "Write NOTES.md, then check who runs your commands."
SEEN = {"written": "File created successfully", "edited": "has been updated successfully", "held": "NoNewPrivs",
        "asked": "which is a sensitive file", "lock": "Permission denied", "key": "EACCES: permission denied"}


def _tool(name: str, after: str, **tool_input: str) -> dict[str, Any]:
    """A rule: once the agent sent back `after` of its last tool call (the prompt holds it, for the first call),
    call tool `name` with `tool_input`."""
    when = {"contains": after} if after == PROMPT else {"tool_result": after}
    return {"when": when, "times": 1, "reply": {"content": [{"type": "tool_use", "name": name, "input": tool_input}]}}


def twin_script(workspace: Path) -> dict[str, Any]:
    """Write, Edit, Bash (who am I, what do I hold), a write to .git Claude Code asks about (so, in --print,
    refuses), the same write disguised, which the fs door refuses, a key refuse_secrets refuses; then an answer
    only when the twin got the key's errno back (the default says it did not)."""
    disguised = f"sh -c 'echo x > \"$0/config\"' {workspace}/.git; echo rc=$?"  # Claude Code's own check misses it
    return {"twin": "twin-script/v0", "markers": False, "rules": [
        _tool("Write", PROMPT, file_path=f"{workspace}/NOTES.md", content="draft"),
        _tool("Edit", SEEN["written"], file_path=f"{workspace}/NOTES.md", old_string="draft", new_string="final"),
        _tool("Bash", SEEN["edited"], description="Show who runs commands",
              command=f"id -u; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; grep -E ':(memory|pids):' "
                      f"/proc/self/cgroup; (: > /usr/sharness-probe) 2>&1; cat {workspace}/NOTES.md; echo; env"),
        _tool("Bash", SEEN["held"], description="Write the git config", command=f"echo x > {workspace}/.git/config"),
        _tool("Bash", SEEN["asked"], description="Write the git config", command=disguised),
        _tool("Write", SEEN["lock"], file_path=f"{workspace}/deploy_key", content=KEY),
        {"when": {"tool_result": SEEN["key"]}, "reply": {"text": "The key was refused: EACCES."}},
    ], "default": {"text": "UNEXPECTED: the twin did not get what it scripted for."}}


def claude_code_manifest(workspace: Path, seed: Path) -> dict[str, Any]:
    """The example with this machine's paths, the twin for the provider (no key), and stream-json output."""
    document: dict[str, Any] = json.loads(json.dumps(EXAMPLE))
    app = document["app"]
    app["argv"] = [str(CLAUDE), "--print", "--output-format", "stream-json",
                   "--verbose", PROMPT]
    app["home_seed"] = str(seed)
    document["workspace"] = str(workspace)
    document["doors"]["model"] = {"upstream": "twin", "budget_microusd": 2000000, "twin_script": twin_script(workspace)}
    del document["doors"]["keys"]
    document["edges"] = [edge for edge in document["edges"] if "keys" not in edge]
    return document


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "project"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    for path in (workspace, workspace / ".git", workspace / ".git" / "config"):
        os.chown(path, 65534, 65534)
    return workspace


def _stream(stdout: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Claude Code's stream-json lines (one JSON object each) and the launcher's --json summary after them."""
    end = stdout.index("\n{\n") + 1
    return [json.loads(line) for line in stdout[:end].splitlines()], json.loads(stdout[end:])


def _tool_results(events: list[dict[str, Any]]) -> list[str]:
    """What Claude Code sent back to the model of each tool call, in order."""
    return [block["content"] if isinstance(block["content"], str) else json.dumps(block["content"])
            for event in events if event["type"] == "user"
            for block in event["message"]["content"] if block.get("type") == "tool_result"]


def _audit(summary: dict[str, Any]) -> list[dict[str, Any]]:
    lines = (Path(summary["audit_dir"]) / "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.skipif(not os.access(CLAUDE, os.X_OK),
                    reason=f"Claude Code is not installed at {CLAUDE}: `make claude-code` fetches it (pinned, sha512 "
                           "checked; `make test` does)")
def test_claude_code_edits_through_the_mount_runs_bash_with_every_lock_and_gets_the_refusals(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    seed = tmp_path / "seed"
    shutil.copytree(EXAMPLES / "agent-cli" / "home", seed)
    manifest = write_manifest(tmp_path, claude_code_manifest(workspace, seed))
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                           "--audit-dir", str(tmp_path / "audit")], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    events, summary = _stream(done.stdout)
    results = _tool_results(events)
    assert len(results) == 6, results
    written, edited, bash, asked, lock, key = results
    assert SEEN["written"] in written and SEEN["edited"] in edited
    assert (workspace / "NOTES.md").read_text() == "final"  # through the mount: the fs door wrote it
    assert (workspace / "NOTES.md").stat().st_uid == 65534  # as the workspace's owner
    _assert_bash_holds_every_lock(bash, summary["sid"])
    assert SEEN["asked"] in asked  # Claude Code's own check: an Expectation, which the disguise gets past
    assert "cannot create" in lock and "Permission denied" in lock and "rc=2" in lock  # doors.fs.read_only
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert key == "EACCES: permission denied, fsync" and not (workspace / "deploy_key").exists()
    # the twin answered its last rule: it got the errno back from the real client
    assert events[-1]["type"] == "result" and events[-1]["result"] == "The key was refused: EACCES."
    _assert_the_doors_logged_it(_audit(summary), summary)
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}


def _assert_bash_holds_every_lock(output: str, sid: str) -> None:
    """The Bash tool's command is Claude Code's child: the app's uid, no_new_privs, seccomp, the app's cgroups and
    root (the kernel refuses a write to /usr: EROFS); its environment, the app's, has the placeholder key and no
    secret."""
    lines = output.splitlines()
    uid = int(lines[0])
    assert uid not in (0, 65534)  # the app's own uid: neither root nor the workspace's owner
    assert "NoNewPrivs:\t1" in lines and "Seccomp:\t2" in lines
    assert f"memory:/sharness/{sid}/app" in output and f"pids:/sharness/{sid}/app" in output
    assert any(line.endswith("/usr/sharness-probe: Read-only file system") for line in lines)  # its root's /usr
    assert "final" in lines  # it reads the workspace through the mount too
    env = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith(" "))
    assert env["ANTHROPIC_API_KEY"] == "sharness-model-door-holds-the-key"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:3129" and "127.0.0.1" in env["NO_PROXY"]
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert secret_shape("\n".join(f"{name}={value}" for name, value in env.items())) is None


def _assert_the_doors_logged_it(audit: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    fs = [(line["op"], line["path"], line["decision"], line["row"]) for line in audit
          if line.get("door") == "fs" and line.get("via") == "mount"]
    assert ("write", ".git/config", "refuse", "read_only") in fs
    assert any(op == "write" and path.startswith("deploy_key") and row == "refuse_secrets"
               for op, path, _, row in fs)
    assert any(op == "rename" and decision == "allow" for op, _, decision, _ in fs)  # Write's temp file, renamed
    assert [line for line in audit if line.get("door") == "net"] == []  # nonessential traffic off: no egress
    calls = [line for line in audit if line.get("kind") == "model.call"]
    assert all(call["caller"] == "app" and call["upstream"] == "sharness.model.anthropic.twin" for call in calls)
    answered = [call for call in calls if call["status"] == 200]
    assert len(answered) == 7 and all(call["ended"] == "complete" for call in answered)
    spend = summary["model_spend"]
    assert spend["calls"] == len(calls) and spend["refused"] == 0
    # app.env's CLAUDE_CODE_MAX_OUTPUT_TOKENS bounds what a call holds of the budget: without it Claude Code asks
    # for 128000 (1.28 USD of output at claude-sonnet-5-5 prices: over half this budget)
    assert all(call["reserved_microusd"] < spend["budget_microusd"] // 2 for call in answered)
    assert spend["spent_microusd"] == sum(call["charged_microusd"] for call in calls) <= spend["budget_microusd"]
