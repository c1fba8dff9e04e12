"""What a client raises when a door cannot be reached, refuses it, or is not the door it dialled."""

from __future__ import annotations


class TransportError(Exception):
    """Base of every transport failure a door client raises."""


class DoorRefused(TransportError):
    """A door (or the kernel, or TLS on the door's side) refused this client; `who` says which."""

    def __init__(self, who: str, reason: str, hint: str, *, row: str = "edges") -> None:
        super().__init__(f"refused by {who}: {reason} (hint: {hint})")
        self.who = who
        self.reason = reason
        self.hint = hint
        self.row = row


class DoorNotTrusted(TransportError):
    """The peer at the dialled address is not the door we dialled: this client refused it."""

    def __init__(self, dialled: str, reason: str) -> None:
        super().__init__(f"the peer dialled as {dialled!r} is not trusted: {reason}")
        self.dialled = dialled
        self.reason = reason


class DoorUnavailable(TransportError):
    """The door could not be reached, or the connection broke before an answer."""
