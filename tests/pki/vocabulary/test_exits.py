"""pki/vocabulary/exits.py: every code has one meaning, and the child codes never collide."""

from __future__ import annotations

import re
from pathlib import Path

from launcher.kernel.confine import STEPS, ConfinementError, step_of_exit_code
from pki import vocabulary
from pki.vocabulary import (
    CHILD_EXITS,
    EXIT_CONFINEMENT_FAILED,
    EXIT_DOOR_CRASHED,
    EXIT_EXEC_FAILED,
    EXIT_PARENT_GONE,
    EXIT_SIGNAL_BASE,
    EXIT_STEP_BASE,
    LAUNCHER_EXITS,
    child_exit_meaning,
    exit_codes_help,
)


def test_each_launcher_code_has_one_meaning() -> None:
    codes = [entry.code for entry in LAUNCHER_EXITS]
    assert len(codes) == len(set(codes))
    assert all(0 <= code <= EXIT_SIGNAL_BASE for code in codes)


def test_each_child_code_has_one_meaning_and_fits_a_wait_status() -> None:
    codes = [entry.code for entry in CHILD_EXITS]
    assert len(codes) == len(set(codes)) and all(0 < code < 256 for code in codes)


def test_the_confinement_steps_codes_end_before_the_other_child_codes() -> None:
    """A step added to launcher/kernel/confine.py STEPS must not take a code that means something else."""
    step_codes = {EXIT_STEP_BASE + index for index in range(len(STEPS))}
    others = {EXIT_CONFINEMENT_FAILED, EXIT_PARENT_GONE, EXIT_DOOR_CRASHED, EXIT_EXEC_FAILED}
    assert not step_codes & others
    assert max(step_codes) < EXIT_CONFINEMENT_FAILED
    assert {step_of_exit_code(ConfinementError(step, "x").exit_code) for step in STEPS} == set(STEPS)
    assert ConfinementError("not a step", "x").exit_code == EXIT_CONFINEMENT_FAILED


def test_single_child_codes_have_words_and_step_codes_do_not() -> None:
    assert child_exit_meaning(EXIT_DOOR_CRASHED) == "the door crashed"
    assert child_exit_meaning(EXIT_EXEC_FAILED) == "its command could not be executed"
    assert child_exit_meaning(EXIT_STEP_BASE) is None and child_exit_meaning(0) is None


def test_the_help_line_lists_every_launcher_code() -> None:
    text = exit_codes_help()
    assert text.splitlines() == [f"  {entry.label:<6} {entry.meaning}" for entry in LAUNCHER_EXITS]


def test_docs_contracts_lists_every_code_with_its_name_and_meaning() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "contracts.md").read_text()
    names = {value: name for name, value in vars(vocabulary.exits).items() if name.startswith("EXIT_")}
    for entry in (*LAUNCHER_EXITS, *CHILD_EXITS):
        row = f"| {entry.label} | `{names[entry.code]}` | {entry.meaning} |"
        assert re.search(rf"^{re.escape(row)}$", text, re.MULTILINE), f"docs/contracts.md lacks: {row}"
