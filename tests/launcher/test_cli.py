"""The CLI: hash and check, exit codes 0/2/65/66/125, --json, the default `run` dispatch."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from launcher import cli

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "manifests" / "demo.json")
VECTORS = REPO / "manifests" / "vectors"
INDEX = json.loads((VECTORS / "index.json").read_text(encoding="utf-8"))["vectors"]
REFUSED = [vector for vector in INDEX if vector["kind"] == "refuse"]
DEMO_HASH = next(vector["sha256"] for vector in INDEX if vector["name"] == "manifest-demo")
WRONG_HASH = "sha256:" + "0" * 64
CLI = Path(sys.executable).parent / "sharness-launch"


def test_hash_prints_the_hash(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hash", DEMO]) == 0
    assert capsys.readouterr().out == DEMO_HASH + "\n"


def test_hash_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hash", "--json", DEMO]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["sha256"] == DEMO_HASH and data["file"] == DEMO
    canonical = (VECTORS / "manifest-demo.canonical").read_bytes()
    assert data["canonical_bytes"] == len(canonical)


def test_hash_canonical(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert cli.main(["hash", "--canonical", DEMO]) == 0
    assert capsysbinary.readouterr().out == (VECTORS / "manifest-demo.canonical").read_bytes()


def test_check_prints_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", DEMO]) == 0
    out = capsys.readouterr().out
    assert DEMO_HASH in out and "rows unheld on this machine" in out
    for words in ("app:", "fs:", "net:", "shell:", "reads", "writes", "executes", "connects to", "edges out",
                  "Boundary", "Setting"):
        assert words in out


def test_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--json", DEMO, "--expect-hash", DEMO_HASH]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["sha256"] == DEMO_HASH
    # Every row of the demo (fs, net and shell) has a holder now; a kernel lacking one would count it here.
    assert data["unheld_count"] == sum(not row["held"] for row in data["rows"])
    assert [component["role"] for component in data["components"]] == ["app", "fs", "net", "shell"]
    assert {row["kind"] for row in data["rows"]} <= {"Boundary", "Setting", "Expectation"}


def test_expect_hash_accepts_uppercase_hex(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", DEMO, "--expect-hash", "sha256:" + DEMO_HASH[7:].upper()]) == 0


def test_hash_mismatch_is_125_and_shows_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", DEMO, "--expect-hash", WRONG_HASH]) == 125
    captured = capsys.readouterr()
    assert captured.out == ""  # no plan for a manifest nobody approved
    assert WRONG_HASH in captured.err and DEMO_HASH in captured.err
    assert cli.main(["check", "--json", DEMO, "--expect-hash", WRONG_HASH]) == 125
    data = json.loads(capsys.readouterr().out)
    assert (data["ok"], data["error"], data["expected"], data["actual"]) == (False, "hash_mismatch", WRONG_HASH,
                                                                             DEMO_HASH)


@pytest.mark.parametrize("given", ["0" * 64, "sha256:abc", "sha1:" + "0" * 40, "sha256:" + "g" * 64])
def test_malformed_expected_hash_is_a_usage_error(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", DEMO, "--expect-hash", given]) == 2
    assert "sha256:<64 hex digits>" in capsys.readouterr().err


@pytest.mark.parametrize("vector", REFUSED, ids=[vector["name"] for vector in REFUSED])
def test_refusal_vectors_exit_65_with_their_pointer(
    vector: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(VECTORS / vector["input"])
    assert cli.main(["check", "--json", path]) == vector["exit"] == 65
    data = json.loads(capsys.readouterr().out)
    assert (data["ok"], data["error"], data["pointer"]) == (False, "bad_manifest", vector["pointer"])
    assert data["hint"] and data["file"] == path
    assert cli.main(["hash", path]) == 65
    err = capsys.readouterr().err
    assert (vector["pointer"] or "(document root)") in err and "hint:" in err


def test_unreadable_files_are_66(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "sh-missing.json")
    assert cli.main(["hash", missing]) == 66
    assert "cannot read" in capsys.readouterr().err
    assert cli.main(["check", "--json", str(tmp_path)]) == 66
    assert json.loads(capsys.readouterr().out)["error"] == "unreadable"


def test_an_oversized_file_is_refused_without_reading_it_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "sh-big.json"
    big.write_bytes(b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert cli.main(["check", "--json", str(big)]) == 65
    assert "over the limit" in json.loads(capsys.readouterr().out)["message"]


@pytest.mark.parametrize("argv", [[], ["hash"], ["hash", "--bogus", DEMO], ["check"], ["--bogus"],
                                  ["hash", "--json", "--canonical", DEMO]])
def test_usage_errors_are_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2


def test_help_is_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "hash" in capsys.readouterr().out


def test_default_command_rule() -> None:
    commands = {"run", "hash", "check"}
    bare = ["m.json", "--expect-hash", "x"]
    assert cli.with_default_command(bare, commands) == ["run", *bare]
    assert cli.with_default_command(["hash", "m.json"], commands) == ["hash", "m.json"]
    assert cli.with_default_command(["--help"], commands) == ["--help"]
    assert cli.with_default_command([], commands) == []
    assert cli.with_default_command(["m.json"], {"hash", "check"}) is None


def test_a_bare_manifest_dispatches_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    run_module = pytest.importorskip("launcher.commands.run", reason="the run command is not built yet")
    seen: list[argparse.Namespace] = []

    def fake_run(args: argparse.Namespace) -> int:
        seen.append(args)
        return 7

    monkeypatch.setattr(run_module, "run", fake_run)
    assert cli.main([DEMO, "--expect-hash", DEMO_HASH]) == 7
    assert seen[0].command == "run" and seen[0].manifest == DEMO and seen[0].expect_hash == DEMO_HASH


def test_unbuilt_commands_are_skipped_but_broken_ones_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("hash", "sh_not_built"))
    _, commands = cli.build_parser()
    assert commands == {"hash"}

    def broken(name: str) -> Any:
        raise ModuleNotFoundError("No module named 'somedep'", name="somedep")

    monkeypatch.setattr(cli.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError):
        cli.build_parser()


def _run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(CLI), *args], input=stdin, capture_output=True, timeout=60, check=False)


def test_the_installed_console_script() -> None:
    done = _run("hash", DEMO)
    assert (done.returncode, done.stdout.decode()) == (0, DEMO_HASH + "\n")
    done = _run("check", "--json", DEMO, "--expect-hash", WRONG_HASH)
    assert done.returncode == 125 and json.loads(done.stdout)["actual"] == DEMO_HASH
    refusal = REFUSED[0]
    done = _run("check", "--json", str(VECTORS / refusal["input"]))
    assert done.returncode == 65 and json.loads(done.stdout)["pointer"] == refusal["pointer"]
    done = _run("hash", "-", stdin=Path(DEMO).read_bytes())
    assert (done.returncode, done.stdout.decode().strip()) == (0, DEMO_HASH)
    assert _run("check").returncode == 2


@pytest.mark.parametrize("module", cli.COMMAND_MODULES)
def test_each_command_module_registers_the_command_named_after_it(module: str) -> None:
    _, commands = cli.build_parser(cli.command_name(module))
    assert commands == {cli.command_name(module)}


def _command_modules_loaded(*argv: str) -> set[str]:
    code = ("import sys; from launcher import cli; cli.main(sys.argv[1:]); "
            "print(' '.join(m for m in sys.modules if m.startswith('launcher.commands.')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
    commands = {f"launcher.commands.{module}" for module in cli.COMMAND_MODULES}
    return set(done.stderr.split()) & commands


def test_a_command_imports_its_own_module_and_no_other_command() -> None:
    """`run` (named, or a bare manifest) and `hash` load only their module; help still lists every command."""
    assert _command_modules_loaded("hash", DEMO) == {"launcher.commands.hash"}
    assert _command_modules_loaded("run", "--help") == {"launcher.commands.run"}
    assert _command_modules_loaded(DEMO, "--expect-hash", WRONG_HASH) == {"launcher.commands.run"}
    done = _run("--help")
    lines = done.stdout.decode().splitlines()
    listed = {line.split()[0] for line in lines if line.startswith("    ") and line[4] != " "}
    assert done.returncode == 0 and listed == {cli.command_name(module) for module in cli.COMMAND_MODULES}
