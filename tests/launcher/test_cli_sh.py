"""`sharness-launch sh`: handed to the shell door's client before any command parser; help and usage still work."""

from __future__ import annotations

import pytest

from launcher import cli
from pki.vocabulary import EXIT_UNAVAILABLE, EXIT_USAGE


def test_outside_a_session_sh_says_so_and_exits_69(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SHARNESS_SESSION", raising=False)
    assert cli.main(["sh", "--", "true"]) == EXIT_UNAVAILABLE
    assert "not inside a sharness session" in capsys.readouterr().err


def test_sh_without_a_command_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sh"]) == EXIT_USAGE
    assert "give the command after --" in capsys.readouterr().err


def test_sh_help_is_the_shell_clients(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sh", "--help"]) == 0
    assert "sharness-launch sh" in capsys.readouterr().out


def test_the_top_level_help_still_lists_sh(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert " sh " in capsys.readouterr().out
