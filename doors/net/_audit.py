"""The audit events of a proxied request: `net.open` before the door resolves and dials (an allowed request),
and `net.request` at its end (every request): who asked for what, what was decided, how much flowed. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

AuditSink = Callable[[dict[str, Any]], None]
MAX_REQUESTED = 300


@dataclass
class Exchange:
    """Filled in as one request goes through the door; `event()` is its audit line.

    Holds no header value and no body: the path and query of a URL are left out too, since they
    may carry tokens.
    """

    role: str
    started: float
    method: str = ""
    requested: str = ""
    host: str = ""
    port: int = 0
    answers: list[str] = field(default_factory=list)
    address: str = ""
    proxy: str = ""  # the upstream proxy's address dialled (doors.net.upstream_proxy), "" when dialled directly
    sni: str = ""  # the ClientHello's server name once it passed the SNI check; "" otherwise
    decision: str = "refuse"
    reason: str = ""
    row: str = ""
    status: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    command: str = ""  # the shell command the request says it is from (doors/net/_command_label.py), or ""
    path: str = ""  # a request inside a terminated tunnel: its path, without the query
    credential: str = ""  # the name of the secret injected into it (never its value): "credential_name" in the event

    def _labelled(self, event: dict[str, Any]) -> dict[str, Any]:
        return {**event, "command": self.command} if self.command else event

    def allow(self, row: str) -> None:
        """Mark the request allowed by the manifest row `row`."""
        self.decision, self.reason, self.row = "allow", "allowlisted", row

    def refuse(self, status: int, reason: str, row: str) -> None:
        """Mark the request refused."""
        self.decision, self.status, self.reason, self.row = "refuse", status, reason, row

    def open_event(self, row: str) -> dict[str, Any]:
        """The event queued before the door acts on an allowed request (resolve, dial): what, for whom, which row."""
        return self._labelled({"door": "net", "kind": "net.open", "client_role": self.role, "method": self.method,
                               "requested": self.requested[:MAX_REQUESTED], "host": self.host, "port": self.port,
                               "row": row})

    def event(self, now: float) -> dict[str, Any]:
        """The audit event (JSON-ready)."""
        return self._labelled({
            "door": "net",
            "kind": "net.request",
            "client_role": self.role,  # the launcher stamps "role" with the door's own (net)
            "method": self.method,
            "requested": self.requested[:MAX_REQUESTED],
            "host": self.host,
            "port": self.port,
            "answers": self.answers,
            "address": self.address,
            "proxy": self.proxy,
            "sni": self.sni,
            "decision": self.decision,
            "reason": self.reason,
            "row": self.row,
            "status": self.status,
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
            "duration_ms": max(0, round((now - self.started) * 1000)),
            **({"path": self.path[:MAX_REQUESTED], "credential_name": self.credential} if self.path else {}),
        })
