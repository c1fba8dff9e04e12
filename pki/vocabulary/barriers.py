"""What holds a row (DESIGN.md "Barrier kinds"): the words `check`, `hello` and every door's hello report."""

from __future__ import annotations

BOUNDARY = "Boundary"  # the kernel, or a process the subject is not
SETTING = "Setting"  # something the subject could switch off
EXPECTATION = "Expectation"  # only the subject's good will
UNHELD = "unheld"  # nothing holds the row on this machine
BARRIER_KINDS: tuple[str, ...] = (BOUNDARY, SETTING, EXPECTATION)
