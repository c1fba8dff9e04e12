"""The cap on distinct names resolved under wildcard rows, per role per session (`doors.net.max_wildcard_names`).

A `*.suffix` row lets the app pick the labels, and the door resolves each name it admits: every distinct name is
a query of the app's making that reaches the suffix's DNS servers. The cap bounds that channel; a name already
admitted costs nothing more. Pure: the set of names is the state, the refusal the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doors.net import _refusal as refusal
from doors.net._decide import Target
from doors.net._refusal import ProxyRefusal

DEFAULT_MAX_WILDCARD_NAMES = 256


@dataclass
class WildcardNames:
    """The names admitted under wildcard rows so far, per role."""

    cap: int = DEFAULT_MAX_WILDCARD_NAMES
    seen: dict[str, set[str]] = field(default_factory=dict)

    def admit(self, role: str, target: Target) -> ProxyRefusal | None:
        """None when `target` is not under a wildcard row, was admitted before, or fits under the cap."""
        if not target.rule.wildcard:
            return None
        names = self.seen.setdefault(role, set())
        if target.host.name in names:
            return None
        if len(names) >= self.cap:
            return refusal.too_many_names(f"role {role!r} has had {self.cap} distinct names resolved under "
                                          f"wildcard rows this session; {target.host} would be one more")
        names.add(target.host.name)
        return None
