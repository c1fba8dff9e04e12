"""The gate before anything is created: the approved hash, a confirmation typed at a terminal, unheld rows."""

from __future__ import annotations

import pytest

from launcher.policy.approval import (
    CONFIRM_HEX,
    Confirm,
    Refusal,
    confirmation_gate,
    fingerprint,
    hash_gate,
    row_names,
    rows_gate,
    unheld_rows,
)
from launcher.policy.plan import BOUNDARY, PlanRow

SHA = "sha256:" + "ab12" * 16
OTHER = "sha256:" + "cd34" * 16


def _row(component: str, row_id: str, held: bool, kernel_can_hold: bool = True, why: str = "") -> PlanRow:
    return PlanRow(component, row_id, "meaning", BOUNDARY, "the kernel", held, why, kernel_can_hold)


@pytest.mark.parametrize(("expected", "terminal", "want"), [
    (SHA, False, None),
    (SHA, True, None),
    (OTHER, False, Refusal("hash", (f"hash mismatch: expected {OTHER}, the manifest is {SHA}; nothing was created",))),
    (OTHER, True, Refusal("hash", (f"hash mismatch: expected {OTHER}, the manifest is {SHA}; nothing was created",))),
    (None, True, Confirm(SHA)),
    (None, False, Refusal("hash", (
        "no --expect-hash and stdin is not a terminal: approve the hash from `sharness-launch check m.json` and "
        "pass it with --expect-hash; nothing was created",))),
])
def test_the_hash_gate(expected: str | None, terminal: bool, want: Refusal | Confirm | None) -> None:
    assert hash_gate(expected, SHA, terminal=terminal, manifest_path="m.json") == want


def test_a_hash_that_differs_in_its_last_character_is_refused() -> None:
    assert isinstance(hash_gate(SHA[:-1] + "0", SHA, terminal=True, manifest_path="m"), Refusal)


HEX = SHA.removeprefix("sha256:")
GROUPED = " ".join(HEX[at:at + 4] for at in range(0, 64, 4))


@pytest.mark.parametrize(("typed", "runs"), [
    (HEX, True),
    (HEX + "\n", True),
    ("  " + HEX.upper() + "  ", True),
    (SHA, True),
    (SHA.upper(), True),
    ("sha256: " + GROUPED, True),  # the fingerprint as shown, pasted back
    (GROUPED.replace(" ", "-"), True),
    (HEX + "a", False),  # one long
    (HEX[:-1] + "0", False),  # the last digit differs: a ground collision on 63 digits is refused
    ("0" + HEX[1:], False),
    (OTHER, False),
    ("", False),
    (None, False),  # the terminal closed
    (HEX[:-1] + "é", False),  # non-ASCII: refused, not a TypeError from compare_digest
    (HEX + "\x00", False),
])
def test_the_confirmation_gate_wants_the_whole_hash(typed: str | None, runs: bool) -> None:
    verdict = confirmation_gate(Confirm(SHA), typed)
    if runs:
        assert verdict is None
    else:
        assert verdict == Refusal("hash", ("the typed characters are not the manifest hash; nothing was created",))


@pytest.mark.parametrize("typed", [HEX[:12], "sha256:" + HEX[:12], HEX[:16], HEX[:32], HEX[:63]])
def test_a_prefix_of_the_hash_is_not_enough_and_the_refusal_says_so(typed: str) -> None:
    # The attack: a forged manifest whose hash starts like the approved one (2^48 hashes for 12 digits).
    # The person types the digits they compared; the gate wants all 64.
    verdict = confirmation_gate(Confirm(SHA), typed)
    assert isinstance(verdict, Refusal) and verdict.gate == "hash"
    digits = len(typed.removeprefix("sha256:"))
    assert verdict.lines == (f"only {digits} of the hash's 64 hex digits were typed: the whole hash is asked for, "
                             "since a shorter match can be forged; nothing was created",)


def test_the_fingerprint_shows_all_64_digits_in_groups_of_four() -> None:
    assert fingerprint(SHA) == "sha256: " + GROUPED
    assert len(GROUPED.split()) == 16 and "".join(GROUPED.split()) == HEX
    assert fingerprint(SHA) in Confirm(SHA).shown


def test_the_prompt_asks_for_as_many_characters_as_are_checked() -> None:
    assert f"whole hash you approved ({CONFIRM_HEX} hex digits" in Confirm(SHA).prompt and CONFIRM_HEX == 64


HELD = _row("app", "uid", held=True)
OLD_KERNEL = _row("app", "landlock.scope", held=False, kernel_can_hold=False, why="needs Landlock ABI 6")
NOT_BUILT = _row("keys", "keys.secrets", held=False, why="this version of sharness-launch lacks the keys door")


@pytest.mark.parametrize(("rows", "best_effort", "want"), [
    ((), False, None),
    ((HELD,), False, None),
    ((HELD, OLD_KERNEL, NOT_BUILT), True, None),
    ((HELD, OLD_KERNEL, NOT_BUILT), False, Refusal("rows", (
        "2 row(s) cannot be held here; nothing was created:",
        "  app: landlock.scope (this kernel cannot hold it): needs Landlock ABI 6",
        "  keys: keys.secrets (not in this version): this version of sharness-launch lacks the keys door",
        "change the manifest, or run with --best-effort to run those rows unheld",
    ))),
])
def test_the_rows_gate(rows: tuple[PlanRow, ...], best_effort: bool, want: Refusal | None) -> None:
    assert rows_gate(rows, best_effort=best_effort) == want


def test_unheld_rows_keep_plan_order_and_are_named_component_colon_row() -> None:
    rows = (NOT_BUILT, HELD, OLD_KERNEL)
    assert unheld_rows(rows) == (NOT_BUILT, OLD_KERNEL)
    assert row_names(unheld_rows(rows)) == ["keys:keys.secrets", "app:landlock.scope"]
    assert row_names(()) == []
