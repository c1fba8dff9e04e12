"""The verdict when the app ended its session: its code passes through unless it is one of the launcher's."""

from __future__ import annotations

import pytest

from launcher.policy.verdict import COLLISION_EXIT_CODE, RUN_OWN_EXITS, app_end_words, app_verdict
from pki.vocabulary import EXIT_FAILED, EXIT_OK, EXIT_SIGNAL_BASE, EXIT_UNAVAILABLE, EXIT_USAGE, LAUNCHER_EXITS


@pytest.mark.parametrize(("code", "exit_code"), [
    (0, 0), (1, 1), (2, 2), (3, 3), (64, 64), (69, 69), (71, 71), (126, 126), (127, 127), (130, 130), (205, 205),
    (255, 255), (65, 1), (66, 1), (70, 1), (77, 1), (78, 1), (124, 1), (125, 1),
])
def test_the_apps_code_passes_through_unless_it_is_the_launchers_own(code: int, exit_code: int) -> None:
    verdict = app_verdict(code, f"app exited with code {code}")
    assert (verdict.exit_code, verdict.app_exit_code) == (exit_code, code)
    assert verdict.reason.startswith(f"app exited with code {code}")
    said = f'the launcher exits 1 instead, {code} being its own code for "' in verdict.reason
    assert said == (code in RUN_OWN_EXITS)


def test_the_reason_says_what_the_launchers_code_would_have_meant() -> None:
    assert "a door died, the launcher failed" in app_verdict(70, "app exited with code 70").reason
    assert "hash is not the one approved" in app_verdict(125, "app exited with code 125").reason


def test_a_failure_is_never_mapped_to_success() -> None:
    assert COLLISION_EXIT_CODE != 0 and COLLISION_EXIT_CODE not in RUN_OWN_EXITS
    assert all(app_verdict(code, "").exit_code != 0 for code in range(1, 256))


@pytest.mark.parametrize(("exit_status", "signal_number", "words"), [
    (0, None, "app exited with code 0"), (205, None, "app exited with code 205"),
    (None, 9, "app was killed by signal 9"),
])
def test_the_words_claim_nothing_beyond_the_number(exit_status: int | None, signal_number: int | None,
                                                   words: str) -> None:
    assert app_end_words(exit_status, signal_number) == words


def test_the_reserved_codes_are_every_code_of_the_launchers_own_but_the_shared_ones() -> None:
    """0 and 1 are everyone's, 2 the app's usage errors too (grep), 69 only `fs` returns, 128+N a signal's:
    every other code in the vocabulary's table is one `run` alone may end with."""
    shared = {EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_SIGNAL_BASE}
    assert {entry.code for entry in LAUNCHER_EXITS} - shared == RUN_OWN_EXITS
