"""One row of the plan before it is judged: what it means, its barrier kind, its holder, and what of the kernel
it needs (launcher/policy/plan.py judges it against this machine). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from launcher.policy.plan_kernel import KernelCheck


@dataclass(frozen=True)
class RowSpec:
    """A row of the plan: its id, meaning, barrier kind, holder, and the kernel check that says it can hold."""

    row_id: str
    meaning: str
    kind: str
    held_by: str
    kernel: KernelCheck
