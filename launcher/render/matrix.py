"""The enforceability matrix: every row `check` lists, with how one target holds it. Pure: no I/O.

The rows come from the plan (launcher/policy/plan.py build_plan), the one enumeration `check` prints: a target
adds no row and drops none. Each target says, per row id, which barrier holds the row there and by what
mechanism, in `check`'s words (pki.vocabulary: Boundary, Setting, Expectation, unheld). A row a target's table
has no line for is reported unheld, saying so (tests/launcher/render hold every table to every row).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from launcher.manifest import Manifest
from launcher.policy.plan import Plan, PlanRow
from pki.vocabulary import UNHELD

NO_LINE = "this target's table has no line for the row"


@dataclass(frozen=True)
class Hold:
    """How a target holds one row: a barrier kind (or UNHELD) and the mechanism, or why it cannot."""

    kind: str
    mechanism: str


# A line is a Hold, or a function of the manifest and the row for the few that depend on the rest of it.
HoldLine = Hold | Callable[[Manifest, PlanRow], Hold]
HoldTable = Mapping[str, HoldLine]


@dataclass(frozen=True)
class MatrixLine:
    """One manifest row as the launcher holds it and as the target does."""

    component: str
    row_id: str
    meaning: str
    launcher_kind: str
    launcher_holder: str
    kind: str
    mechanism: str

    @property
    def held(self) -> bool:
        return self.kind != UNHELD

    def as_dict(self) -> dict[str, Any]:
        """The line as JSON-ready data."""
        return {**self.__dict__, "held": self.held}


def hold_of(table: HoldTable, manifest: Manifest, row: PlanRow) -> Hold:
    """The table's line for `row`: "<component>:<row id>", then the row id, then "<component>:*", else unheld
    (NO_LINE)."""
    line = table.get(f"{row.component}:{row.row_id}") or table.get(row.row_id) or table.get(f"{row.component}:*")
    if line is None:
        return Hold(UNHELD, NO_LINE)
    return line if isinstance(line, Hold) else line(manifest, row)


def matrix_of(manifest: Manifest, plan: Plan, table: HoldTable) -> tuple[MatrixLine, ...]:
    """Every row of `plan`, in its order, with the target's hold from `table`."""
    lines = []
    for row in plan.rows:
        hold = hold_of(table, manifest, row)
        lines.append(MatrixLine(row.component, row.row_id, row.meaning, row.kind, row.held_by, hold.kind,
                                hold.mechanism))
    return tuple(lines)


def unheld_count(matrix: tuple[MatrixLine, ...]) -> int:
    """How many lines the target does not hold."""
    return sum(1 for line in matrix if not line.held)
