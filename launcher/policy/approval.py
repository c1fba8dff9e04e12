"""The gate before anything is created: the hash a person approved, or their confirmation on a terminal, and
the rows this machine cannot hold. Pure: each gate returns what to tell the person, or None to go on.

launcher/commands/run.py does the I/O (the prompt, the terminal, stderr) and maps a refusal's gate to its
exit code.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from launcher.policy.plan import PlanRow

# The whole hash: a confirmation that checks k hex digits is forged by a search of ~16^k hashes, and a
# search of 2^48 (the 12 digits this asked for before) is hours on one GPU (docs/decisions/manifest.md).
CONFIRM_HEX = 64
FINGERPRINT_GROUP = 4
NOTHING_CREATED = "nothing was created"
_IGNORED_IN_ANSWER = str.maketrans("", "", " \t-:")


@dataclass(frozen=True)
class Refusal:
    """The session does not start. `gate` is "hash" or "rows"; `lines` are said to the person, in order."""

    gate: str
    lines: tuple[str, ...]


def fingerprint(sha256: str) -> str:
    """The hash as a person compares it: `sha256: 1a2b 3c4d ...`, all 64 hex digits in groups of four."""
    digits = sha256.removeprefix("sha256:")
    return "sha256: " + " ".join(digits[at:at + FINGERPRINT_GROUP] for at in range(0, len(digits), FINGERPRINT_GROUP))


@dataclass(frozen=True)
class Confirm:
    """No hash was given but a person is at the terminal: show them the plan and the fingerprint, and ask for
    the whole hash they approved (typed or pasted), which is then compared digit for digit."""

    sha256: str
    prompt: str = (f"type or paste the whole hash you approved ({CONFIRM_HEX} hex digits; spaces and "
                   "'sha256:' are ignored) to run it: ")

    @property
    def shown(self) -> str:
        """What the person compares with the hash they approved, before they answer."""
        return f"manifest hash (compare every group with the one you approved):\n  {fingerprint(self.sha256)}"


def hash_gate(expected: str | None, sha256: str, *, terminal: bool, manifest_path: str) -> Refusal | Confirm | None:
    """Compare the hash approved out of band with the manifest's, or ask at a terminal when none was given."""
    if expected is None:
        if not terminal:
            return Refusal("hash", (
                f"no --expect-hash and stdin is not a terminal: approve the hash from `sharness-launch check "
                f"{manifest_path}` and pass it with --expect-hash; {NOTHING_CREATED}",))
        return Confirm(sha256)
    if not hmac.compare_digest(expected.encode(), sha256.encode()):
        return Refusal("hash", (f"hash mismatch: expected {expected}, the manifest is {sha256}; {NOTHING_CREATED}",))
    return None


def confirmation_gate(confirm: Confirm, typed: str | None) -> Refusal | None:
    """Whether what the person typed (None: the terminal closed) is the manifest's whole hash."""
    want = confirm.sha256.removeprefix("sha256:")
    answer = (typed or "").strip().lower().removeprefix("sha256:").translate(_IGNORED_IN_ANSWER)
    # Bytes: compare_digest refuses str with non-ASCII characters, and a person may type anything.
    if typed is not None and hmac.compare_digest(answer.encode(), want.encode()):
        return None
    if typed is not None and 0 < len(answer) < CONFIRM_HEX and want.startswith(answer):
        return Refusal("hash", (f"only {len(answer)} of the hash's {CONFIRM_HEX} hex digits were typed: the whole "
                                f"hash is asked for, since a shorter match can be forged; {NOTHING_CREATED}",))
    return Refusal("hash", (f"the typed characters are not the manifest hash; {NOTHING_CREATED}",))


def unheld_rows(rows: Sequence[PlanRow]) -> tuple[PlanRow, ...]:
    """The rows nothing holds on this machine, in plan order."""
    return tuple(row for row in rows if not row.held)


def row_names(rows: Sequence[PlanRow]) -> list[str]:
    """`component:row_id` for each row (what the summary and the audit log name)."""
    return [f"{row.component}:{row.row_id}" for row in rows]


def rows_gate(rows: Sequence[PlanRow], *, best_effort: bool) -> Refusal | None:
    """Refuse a plan with unheld rows, naming each and who cannot hold it, unless --best-effort runs them."""
    unheld = unheld_rows(rows)
    if not unheld or best_effort:
        return None
    lines = [f"{len(unheld)} row(s) cannot be held here; {NOTHING_CREATED}:"]
    for row in unheld:
        who = "this kernel cannot hold it" if not row.kernel_can_hold else "not in this version"
        lines.append(f"  {row.component}: {row.row_id} ({who}): {row.why_unheld}")
    lines.append("change the manifest, or run with --best-effort to run those rows unheld")
    return Refusal("rows", tuple(lines))
