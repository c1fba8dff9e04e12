"""Helpers for the shell door's session tests: run the probe app with cases, read its frames back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from doors.shell._wire import decode_chunk
from tests.integration._session import (
    LAUNCHER,
    basic_manifest,
    leftovers,
    manifest_hash,
    probes_and_summary,
    write_manifest,
)

PROBE = str(Path(__file__).with_name("shell_probe.py"))
PY = sys.executable


def case(name: str, **body: Any) -> dict[str, Any]:
    return {"name": name, "body": body}


def py(name: str, code: str, **body: Any) -> dict[str, Any]:
    return case(name, argv=[PY, "-c", code], **body)


def run_session(tmp_path: Path, cases: list[dict[str, Any]], shell: dict[str, Any] | None = None,
                net: bool = False, model: bool = False) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hi\n")
    (workspace / "sub").mkdir()
    (workspace / "out").symlink_to("/etc")
    document = basic_manifest(workspace, [PY, PROBE, json.dumps(cases)])
    document["doors"] = {"shell": shell or {"workspace": "read"},
                         **({"net": {"allow": {"shell": ["example.invalid:443"]}}} if net else {}),
                         **({"model": {"upstream": "twin", "budget_microusd": 1_000_000}} if model else {})}
    document["edges"] = [["app", "shell"], *([["shell", "net"]] if net else []),
                         *([["shell", "model"]] if model else [])]
    manifest = write_manifest(tmp_path, document)
    done = subprocess.run([*LAUNCHER, "run", str(manifest), "--expect-hash", manifest_hash(manifest), "--json",
                           "--best-effort", "--audit-dir", str(tmp_path / "audit")],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    probes, summary = probes_and_summary(done.stdout)
    assert summary["teardown_errors"] == [] and leftovers(summary["sid"]) == {}
    return probes, summary


def output(probe: dict[str, Any], stream: str) -> bytes:
    return b"".join(decode_chunk(f) for f in probe["frames"] if f.get("stream") == stream and "omitted" not in f)


def final(probe: dict[str, Any]) -> dict[str, Any]:
    assert "refused" not in probe, probe
    return dict(probe["frames"][-1]["final"])


def audit(summary: dict[str, Any]) -> list[dict[str, Any]]:
    text = Path(summary["audit_dir"], "audit.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


Session = tuple[dict[str, dict[str, Any]], dict[str, Any]]


@contextmanager
def shell_session(cases: list[dict[str, Any]], shell: dict[str, Any] | None = None,
                  net: bool = False, model: bool = False) -> Iterator[Session]:
    """A session whose app runs `cases` through the shell door; its probes and the launcher's summary."""
    tmp = Path(tempfile.mkdtemp(prefix="sh-test-", dir="/tmp"))
    tmp.chmod(0o755)
    try:
        yield run_session(tmp, cases, shell, net, model)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
