"""One call's audit record: what the model door reserved, forwarded, charged and answered. Pure.

Its event holds counts, statuses, ids and names; never prompt or completion text, never a header value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from doors.model._usage import Usage

NO_USAGE = Usage()


@dataclass
class CallRecord:
    """Filled in as the call goes; `event` is the one `model.call` line at its end."""

    role: str
    route: str
    request_id: str
    upstream: str
    started: float
    model: str = ""
    streamed: bool = False
    reserved_microusd: int = 0
    charged_microusd: int = 0
    overrun_microusd: int = 0  # what the usage said beyond the reservation (the reservation was wrong)
    usage: Usage = field(default=NO_USAGE)
    upstream_status: int = 0
    status: int = 0
    ended: str = ""  # complete | cut | client-gone | refused | upstream-error
    row: str = ""  # the row that refused, when one did

    def open_event(self) -> dict[str, Any]:
        """`model.open`: queued before the door forwards anything (the door acts only once it is)."""
        return {"door": "model", "kind": "model.open", "caller": self.role, "route": self.route,
                "request_id": self.request_id, "model": self.model, "streamed": self.streamed,
                "reserved_microusd": self.reserved_microusd, "upstream": self.upstream}

    def event(self, now: float) -> dict[str, Any]:
        """`model.call`: the one line that says what this call cost and how it ended."""
        usage = self.usage
        return {"door": "model", "kind": "model.call", "caller": self.role, "route": self.route,
                "request_id": self.request_id, "model": self.model, "streamed": self.streamed,
                "upstream": self.upstream, "upstream_status": self.upstream_status, "status": self.status,
                "ended": self.ended, "row": self.row, "reserved_microusd": self.reserved_microusd,
                "charged_microusd": self.charged_microusd, "overrun_microusd": self.overrun_microusd,
                "tokens": {"input": usage.input_tokens, "cache_creation_5m": usage.cache_creation_5m,
                           "cache_creation_1h": usage.cache_creation_1h, "cache_read": usage.cache_read,
                           "output": usage.output_tokens},
                "duration_ms": round((now - self.started) * 1000, 3)}
