"""`sharness-launch render`: the text and JSON forms, --out, --strict's 78, and the refusals of `check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from render_cases import EXAMPLES

from launcher.cli import main
from launcher.commands.render import shown
from pki.vocabulary import EXIT_BAD_MANIFEST, EXIT_NO_INPUT, EXIT_OK, EXIT_UNHELD, EXIT_USAGE, UNHELD

CODING = str(EXAMPLES["coding-agent"])


@pytest.mark.parametrize("target", ["kubernetes", "bwrap", "docker"])
def test_strict_exits_78_when_a_row_is_unheld_and_0_without(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", CODING, "--to", target, "--sid", "0123abcd"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "rows unheld by" in text and f"-> {UNHELD}" in text
    assert main(["render", CODING, "--to", target, "--strict", "--sid", "0123abcd"]) == EXIT_UNHELD


def test_json_is_the_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", CODING, "--to", "docker", "--json", "--sid", "0123abcd"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["target"] == "docker" and report["row_count"] == len(report["matrix"])
    assert report["unheld_count"] == sum(1 for line in report["matrix"] if not line["held"])
    assert {"component", "row_id", "meaning", "kind", "mechanism", "launcher_kind"} <= set(report["matrix"][0])


def test_out_writes_the_files_and_the_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", CODING, "--to", "bwrap", "--out", str(tmp_path)]) == EXIT_OK
    assert (tmp_path / "bwrap.sh").read_text().startswith("#!/bin/sh\n")
    assert (tmp_path / "app.seccomp.bpf").stat().st_size % 8 == 0
    assert f"wrote {tmp_path}/bwrap.sh" in capsys.readouterr().out
    assert main(["render", CODING, "--to", "kubernetes", "--out", str(tmp_path / "k8s")]) == EXIT_OK
    assert (tmp_path / "k8s" / "session.yaml").exists() and (tmp_path / "k8s" / "seccomp" / "app.json").exists()


def test_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"sharness": "manifest/v0"}')
    assert main(["render", str(bad), "--to", "docker"]) == EXIT_BAD_MANIFEST
    assert main(["render", str(tmp_path / "missing.json"), "--to", "docker"]) == EXIT_NO_INPUT
    assert main(["render", CODING, "--to", "podman"]) == EXIT_USAGE
    assert main(["render", CODING, "--to", "docker", "--sid", "XYZ"]) == EXIT_USAGE


def test_a_file_with_unreadable_characters_is_shown_escaped() -> None:
    assert shown("echo ok\n") == "echo ok"
    escaped = shown("echo \x1b[2Jgone\n")
    assert "\x1b" not in escaped and "--out DIR writes the exact file" in escaped
