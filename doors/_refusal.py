"""The one error shape: who refused what, and what to change. Pure: no I/O.

A door answers every refusal as `{"error": <row>, "who", "detail", "hint"}` with an HTTP status
(docs/contracts.md). `Refusal` is that record, wherever it is decided (the HTTP layer, the transport, a
door's pure core); `DoorRefused` is the one exception that carries it: a handler raises it to answer with
it, and a client raises it when a door, the kernel or TLS refused the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Refusal:
    """One refusal: its HTTP status, the row that refused, who refused, what happened, and what to change."""

    # The status a door answers it with; a refusal that never was an HTTP answer (the kernel on the
    # socket, a TLS alert, a door missing from the session) is the 403 the door would have answered.
    status: int
    row: str  # the shape's `error`: a manifest row (`read_only`, `edges`) or a protocol row (`http.route`)
    who: str  # a door's role, "kernel", "launcher", or "door" for the HTTP layer under a door
    detail: Any  # what was refused and why, for a person (any JSON value)
    hint: str  # what to change, naming the manifest row when one would allow it

    def shape(self) -> dict[str, Any]:
        """The JSON error shape (without the status, which travels as the HTTP status)."""
        return {"error": self.row, "who": self.who, "detail": self.detail, "hint": self.hint}


def read_refusal(status: int, body: object, *, who: str, row: str, detail: str = "") -> Refusal:
    """A door's error body read back leniently: a field it lacks (or a body not an object) takes the default."""
    shape: Mapping[str, Any] = body if isinstance(body, dict) else {}
    return Refusal(status, str(shape.get("error", row)), str(shape.get("who", who)),
                   str(shape.get("detail", detail)), str(shape.get("hint", "")))


class DoorRefused(Exception):
    """A Refusal raised: a door's handler stops and answers it; a client was refused (`refusal.who` says by whom).

    `close` asks the door to close the connection after answering (the stream can no longer be trusted).
    """

    def __init__(self, refusal: Refusal, *, close: bool = False) -> None:
        super().__init__(f"refused by {refusal.who} ({refusal.row}): {refusal.detail} (hint: {refusal.hint})")
        self.refusal = refusal
        self.close = close
