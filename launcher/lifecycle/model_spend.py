"""What the model door says the session spent, summed from its `model.call` audit events, beside the budget.

The launcher only adds up what the door reported (the door holds the budget); the summary at exit shows it,
so a person sees spend beside budget without reading the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass
class ModelSpend:
    budget_microusd: int
    spent_microusd: int = 0
    calls: int = 0
    refused: int = 0

    def note(self, event: Mapping[str, object]) -> None:
        """Count one model door event (others are ignored)."""
        if event.get("kind") != "model.call":
            return
        charged = event.get("charged_microusd")
        if isinstance(charged, int) and not isinstance(charged, bool) and charged >= 0:
            self.spent_microusd += charged
        self.calls += 1
        if event.get("ended") == "refused":
            self.refused += 1

    def words(self) -> str:
        """One line for the person: spend beside budget."""
        return (f"model: spent {self.spent_microusd} of {self.budget_microusd} micro-USD "
                f"(${self.spent_microusd / 1_000_000:.6f} of ${self.budget_microusd / 1_000_000:.6f}) in "
                f"{self.calls} call(s), {self.refused} refused")

    def as_dict(self) -> dict[str, int]:
        return {"budget_microusd": self.budget_microusd, "spent_microusd": self.spent_microusd,
                "calls": self.calls, "refused": self.refused}
