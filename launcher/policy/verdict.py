"""The launcher's verdict when the app ended its session: never one of the launcher's own codes. Pure: no I/O.

The launcher passes the app's exit code through, except where it would say something the launcher alone may
say: an app that exits 70 must not read as "a door died", nor 125 as "hash mismatch, nothing was created".
Such a code is reported as 1 (still a failure; never 0), the verdict line says so, and `run --json` carries
the app's own code as `app_exit_code` (docs/decisions.md, "The app's exit code never reads as the launcher's").
"""

from __future__ import annotations

from dataclasses import dataclass

from pki.vocabulary import (
    EXIT_BAD_MANIFEST,
    EXIT_FAIL_CLOSED,
    EXIT_FAILED,
    EXIT_HASH_MISMATCH,
    EXIT_NO_INPUT,
    EXIT_NOT_ROOT,
    EXIT_TTL,
    EXIT_UNHELD,
    LAUNCHER_EXITS,
)

# The codes `run` itself ends with; an app's exit with one of them is reported as COLLISION_EXIT_CODE.
RUN_OWN_EXITS = frozenset({EXIT_BAD_MANIFEST, EXIT_NO_INPUT, EXIT_FAIL_CLOSED, EXIT_NOT_ROOT, EXIT_UNHELD, EXIT_TTL,
                           EXIT_HASH_MISMATCH})
COLLISION_EXIT_CODE = EXIT_FAILED
_MEANINGS = {entry.code: entry.meaning for entry in LAUNCHER_EXITS if entry.label == str(entry.code)}


@dataclass(frozen=True)
class AppVerdict:
    """How the session ended when the app ended it: the launcher's exit code, the app's own, and the words."""

    exit_code: int
    app_exit_code: int
    reason: str


def app_end_words(exit_status: int | None, signal_number: int | None) -> str:
    """The app's end in words, claiming nothing beyond the number (an app's code is its own)."""
    if signal_number is not None:
        return f"app was killed by signal {signal_number}"
    return f"app exited with code {exit_status}"


def app_verdict(app_exit_code: int, how: str) -> AppVerdict:
    """The verdict for an app that ended with `app_exit_code` (shell convention: 128+N for signal N), `how`
    saying it in words."""
    if app_exit_code not in RUN_OWN_EXITS:
        return AppVerdict(app_exit_code, app_exit_code, how)
    return AppVerdict(COLLISION_EXIT_CODE, app_exit_code,
                      f"{how}; the launcher exits {COLLISION_EXIT_CODE} instead, {app_exit_code} being its own code "
                      f"for \"{_MEANINGS[app_exit_code]}\"")
